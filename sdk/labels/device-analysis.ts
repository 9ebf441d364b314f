/**
 * The labelers' analysis for frames that live on the GPU: the grid sums come from the CUDA
 * kernel (native lumaStatsOnDevice) next to the frames, only ~2 KB a frame crosses to the host,
 * and the same statsFromSums turns them into the FrameStats the CPU path produces (equal
 * exactly: both read the same grid samples and sum integers).
 */
import { lumaStatsOnDevice, type DeviceFrame } from "../../native/index.js";
import { analysisFromSums, analysisStep, type AnalysisOptions, type ClipAnalysis } from "./analysis.js";

/** Whether a clip's frames are device frames from a cuda decoder. */
export function isDeviceClip(frames: readonly unknown[]): frames is readonly DeviceFrame[] {
  return frames.length > 0 && frames.every((f) => (f as { kind?: unknown } | null)?.kind === "device");
}

/**
 * @example
 * const frames = await decoder.decode(clip); // a cuda decoder
 * const analysis = await analyzeDeviceClip(frames);
 */
export async function analyzeDeviceClip(
  frames: readonly DeviceFrame[],
  options: AnalysisOptions = {},
): Promise<ClipAnalysis> {
  if (frames.length === 0) return analysisFromSums([], 1, []);
  const step = analysisStep(frames[0]!, options);
  return analysisFromSums(frames, step, await lumaStatsOnDevice(frames, step));
}
