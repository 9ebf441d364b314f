/**
 * In-stream clip validation and labeling: named labelers over decoded frames, merged into
 * ClipInfo.labels, a filter policy, and results cached per (object etag, clip).
 */
export type { PixelFormat, VideoFrame, GpuFrame, LabelFrame, ClipTensor, LumaGrid } from "./frame.js";
export { framesFromTensor, lumaGrid, gridStep } from "./frame.js";
export type { FrameStats, ClipAnalysis, AnalysisOptions, GridSums, SizedFrame } from "./analysis.js";
export { analyzeClip, analysisFromSums, analysisStep, fractionAtMost } from "./analysis.js";
export { analyzeDeviceClip, isDeviceClip } from "./device-analysis.js";
export type {
  Labeler,
  LabelerFactory,
  LabelFunction,
  LabelResult,
  LabelValue,
  LabelClipInfo,
  LabelContext,
  DecodeReport,
} from "./labeler.js";
export {
  labelerRegistry,
  registerLabeler,
  labelerFromFunction,
  resolveLabelers,
  DEFAULT_LABELERS,
  type LabelsSpec,
} from "./registry.js";
export { labelClip, toFrames, type ClipLabels } from "./label-clip.js";
export { filterPredicate, type FilterPolicy } from "./filter.js";
export { createLabelStage, type LabelStage, type LabelStageOptions, type LabelHooks } from "./stage.js";
export type { LabelCache, LabelCacheKey } from "./cache/label-cache.js";
export { sidecarPath, etagSegment } from "./cache/label-cache.js";
export { MemoryLabelCache } from "./cache/memory-cache.js";
export { DirLabelCache } from "./cache/dir-cache.js";
export { EdgeLabelCache, type EdgeLabelCacheOptions } from "./cache/edge-cache.js";
export { LabelOptionError, LabelFrameError, LabelerFailedError, LabelCacheError } from "./errors.js";
export { IntegrityOptions, integrityLabeler } from "./builtins/integrity.js";
export { BlackOptions, blackLabeler } from "./builtins/black.js";
export { FrozenOptions, frozenLabeler } from "./builtins/frozen.js";
export { SceneCutOptions, sceneCutLabeler } from "./builtins/scene-cut.js";
export { MotionOptions, motionLabeler } from "./builtins/motion.js";
export { LetterboxOptions, letterboxLabeler } from "./builtins/letterbox.js";
export { ConformanceOptions, conformanceLabeler } from "./builtins/conformance.js";
export { ThumbnailCollector, type ClipThumbnail } from "./report/index.js";
export {
  summarize,
  renderTable,
  renderHtml,
  type LabeledClip,
  type LabelSummary,
  type Histogram,
  type ObjectSummary,
} from "./report/index.js";
export { labelOptionHooks } from "./option-hooks.js";
