/** ec: stream raw video from a bucket into a training loop. The package's public surface. */
export { EcError } from "../common/errors.js";
export { open, Dataset, type OpenParts } from "./open.js";
export {
  resolveOptions,
  type OpenOptions,
  type ResolvedOptions,
  type LabelsHook,
  type FilterHook,
  type ErrorHook,
} from "./options.js";
export type { ClipInfo } from "./clip-info.js";
export type { Batch } from "./pipeline/batcher.js";
export type {
  DecodeClip,
  DecodeRequest,
  DecodedClip,
  DecodedFrame,
  DecodeImage,
  DecodeImageRequest,
  Packet,
} from "./pipeline/decode.js";
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
  resolveLabelers,
  labelClip,
  MemoryLabelCache,
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
