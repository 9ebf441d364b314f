/** Runs a clip's labelers over one shared analysis and merges their results. */
import type { ClipLabelsV1, LabelResultV1 } from "../../common/schema/labels-v1.js";
import { describeReceived } from "../../common/errors.js";
import { analyzeClip, type AnalysisOptions, type ClipAnalysis } from "./analysis.js";
import { analyzeDeviceClip, isDeviceClip } from "./device-analysis.js";
import { LabelerFailedError, LabelFrameError } from "./errors.js";
import { framesFromTensor, type LabelFrame, type VideoFrame } from "./frame.js";
import type { LabelClipInfo, LabelContext, Labeler, LabelResult, LabelValue } from "./labeler.js";

export type ClipLabels = ClipLabelsV1;

/**
 * Accepts what a pipeline holds for a clip: a list of frames, a decoded clip `{ frames }` (its
 * `gpuFrames` when the clip was decoded on a GPU) or a [T, H, W, C] tensor.
 *
 * @example
 * const frames = toFrames({ data: tensor.data, shape: [16, 224, 224, 3] });
 */
export function toFrames(frames: unknown): readonly LabelFrame[] {
  if (Array.isArray(frames)) return frames as LabelFrame[];
  // The pipeline's decoded clip: { frames: [{ data, width, height, format }], device, gpuFrames? };
  // frames still on the GPU are labeled there.
  const gpu = (frames as { gpuFrames?: unknown } | null)?.gpuFrames;
  if (Array.isArray(gpu) && gpu.length > 0) return gpu as LabelFrame[];
  if (frames !== null && typeof frames === "object" && Array.isArray((frames as { frames?: unknown }).frames)) {
    return (frames as { frames: VideoFrame[] }).frames;
  }
  if (frames !== null && typeof frames === "object" && "data" in frames && "shape" in frames) {
    return framesFromTensor(frames as { data: Uint8Array | Float32Array; shape: number[] });
  }
  throw new LabelFrameError(
    `Expected a list of frames or a [T, H, W, C] tensor but received ${describeReceived(frames)}`,
  );
}

function hostFrames(frames: readonly LabelFrame[]): readonly VideoFrame[] {
  const i = frames.findIndex((f) => "kind" in f && f.kind === "device");
  if (i >= 0)
    throw new LabelFrameError(
      `Expected every frame of a clip on one device but frames[${i}] is on the GPU and others are not`,
    );
  return frames as readonly VideoFrame[];
}

function normalize(name: string, r: unknown, severity: Labeler["severity"]): LabelResultV1 {
  if (r === null || typeof r !== "object" || Array.isArray(r)) {
    throw new LabelerFailedError(
      name,
      `Expected a result record { flags?, values?, valid? } but received ${describeReceived(r)}`,
    );
  }
  const { flags = [], values = {}, valid } = r as LabelResult;
  if (!Array.isArray(flags) || flags.some((f) => typeof f !== "string")) {
    throw new LabelerFailedError(
      name,
      `Expected flags to be a list of strings but received ${describeReceived(flags)}`,
    );
  }
  const clean: Record<string, LabelValue> = {};
  for (const [k, v] of Object.entries(values)) {
    const ok =
      typeof v === "number" ||
      typeof v === "boolean" ||
      typeof v === "string" ||
      (Array.isArray(v) && v.every((x) => typeof x === "number"));
    if (!ok)
      throw new LabelerFailedError(
        name,
        `Expected values.${k} to be a number, boolean, string or number list but received ${describeReceived(v)}`,
      );
    clean[k] = typeof v === "number" && !Number.isFinite(v) ? 0 : v;
  }
  return {
    valid: valid ?? (severity === "tag" || flags.length === 0),
    flags: [...flags],
    values: clean as Record<string, number | boolean | string | number[]>,
  };
}

/**
 * Labels one clip: the analysis is computed at most once, on first use, and shared.
 *
 * @example
 * const labels = await labelClip(frames, { key: "a.mp4", start: 0, frames: 16, stride: 1 }, resolveLabelers(true));
 * if (!labels.valid) console.log(labels.flags);
 */
export async function labelClip(
  frames: readonly LabelFrame[],
  info: LabelClipInfo,
  labelers: readonly Labeler[],
  options: AnalysisOptions = {},
): Promise<ClipLabels> {
  // Frames on the GPU are analysed there, once, before any labeler runs.
  let analysis: ClipAnalysis | undefined = isDeviceClip(frames) ? await analyzeDeviceClip(frames, options) : undefined;
  const context: LabelContext = { analysis: () => (analysis ??= analyzeClip(hostFrames(frames), options)) };
  const results: Record<string, LabelResultV1> = {};
  const flags = new Set<string>();
  let valid = true;
  for (const labeler of labelers) {
    let raw: LabelResult;
    try {
      raw = await labeler.label(frames, info, context);
    } catch (err) {
      if (err instanceof LabelFrameError) throw err;
      throw new LabelerFailedError(labeler.name, err instanceof Error ? err.message : String(err), { cause: err });
    }
    const r = normalize(labeler.name, raw, labeler.severity);
    results[labeler.name] = r;
    for (const f of r.flags) flags.add(f);
    valid &&= r.valid;
  }
  return { valid, flags: [...flags], results };
}
