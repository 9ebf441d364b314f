/**
 * ec: stream raw video from a bucket into a training loop. The package's public surface: `open`,
 * the types of its options, batches, clips, checkpoints and stats, the error classes and codes,
 * and the extension points the README documents (sources, shuffles, labelers, label caches,
 * contact sheets). Everything else is internal: `ec/internal` (sdk/internal.ts) for embedders
 * and the repository's own tools, with no promise of stability.
 */
export { EcError } from "../common/errors.js";
export { open, Dataset } from "./open.js";
export type { OpenOptions, LabelsHook, FilterHook, ErrorHook } from "./options.js";
export type { ClipInfo } from "./clip-info.js";
export type { Batch } from "./pipeline/batcher.js";
export type { DecodedClip, DecodedFrame } from "./pipeline/decode.js";
export type { Tensor } from "./tensor.js";
export { StreamStats } from "./stats.js";
export { contactSheet, type ContactSheet, type SheetTile } from "./preview/index.js";
export { Checkpoint, mergeCheckpoints } from "./state/checkpoint.js";
export { registerShuffle, type ShuffleAlgorithm } from "./sampler/shuffle.js";
export {
  registerSource,
  type DatasetSource,
  type DatasetObject,
  type DatasetListing,
  type SourceFactory,
  type SourceOptions,
} from "./source/index.js";
export {
  SdkError,
  SdkErrorCode,
  InvalidOptionError,
  ResumeError,
  ClipError,
  KindUnsupportedError,
  UnsupportedSourceError,
} from "./errors.js";
export {
  createLabelStage,
  registerLabeler,
  labelerFromFunction,
  DirLabelCache,
  EdgeLabelCache,
  type LabelStage,
  type LabelStageOptions,
  type LabelsSpec,
  type Labeler,
  type LabelerFactory,
  type LabelFunction,
  type LabelResult,
  type ClipLabels,
  type FilterPolicy,
  type VideoFrame,
} from "./labels/index.js";
