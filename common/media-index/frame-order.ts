import { isShown } from "./edit-window.js";
import type { SampleTableV1, VideoTrackV1 } from "../schema/index.js";

/**
 * Maps between presentation order (what a clip's frame numbers mean) and decode order (how
 * the index lists samples). Frames are the shown samples (an edit list's window), numbered
 * 0-based by ascending pts, ties by dts: frame 0 is the first frame ffmpeg outputs.
 */
export interface FrameOrder {
  /** decodeOf[frame] = the sample (decode-order index) that shows that frame. */
  readonly decodeOf: Uint32Array;
  /** frameOf[sample] = its presentation index; NOT_SHOWN for a sample the edit list drops. */
  readonly frameOf: Uint32Array;
  /**
   * Frames a decode can start at without drops beyond the frames before them in the GOP:
   * shown keyframes, and frame 0 when its keyframe lies before the edit (a `-ss … -c copy` cut).
   */
  readonly keyframes: readonly number[];
}

/** frameOf of a sample outside the edit window. */
export const NOT_SHOWN = 0xffffffff;

/**
 * @example
 * const order = frameOrder(index.video!.samples, index.video!.edit); order.decodeOf[0]; // the sample shown first
 */
export function frameOrder(samples: SampleTableV1, edit?: VideoTrackV1["edit"]): FrameOrder {
  const n = samples.pts.length;
  const shown = Array.from({ length: n }, (_, i) => i).filter((i) => isShown(edit, samples.pts[i]!));
  shown.sort((a, b) => samples.pts[a]! - samples.pts[b]! || samples.dts[a]! - samples.dts[b]!);
  const decodeOf = Uint32Array.from(shown);
  const frameOf = new Uint32Array(n).fill(NOT_SHOWN);
  decodeOf.forEach((d, f) => (frameOf[d] = f));
  const keyframes: number[] = [];
  for (let d = 0; d < n; d++) if (samples.keyframe[d] && frameOf[d] !== NOT_SHOWN) keyframes.push(frameOf[d]!);
  keyframes.sort((a, b) => a - b);
  if (decodeOf.length > 0 && keyframes[0] !== 0) keyframes.unshift(0);
  return { decodeOf, frameOf, keyframes };
}

/** The decode-order samples a clip needs: from its GOP's keyframe through the last sample it shows. */
export interface DecodeSpan {
  /** First sample to decode (a keyframe) and one past the last, in decode order. */
  readonly firstSample: number;
  readonly endSample: number;
  /** Byte range in the object covering those samples. */
  readonly offset: number;
  readonly length: number;
  /** Bytes of the samples themselves (what an ideal fetch would read). */
  readonly sampleBytes: number;
}

/**
 * The smallest decodable run of samples that shows `frames` (presentation indices), starting at
 * a keyframe no later than sample `startAtOrBefore` (where the caller found a later one unfit).
 *
 * @example
 * const span = decodeSpan(samples, order, [24, 25, 26, 27]);
 */
export function decodeSpan(
  samples: SampleTableV1,
  order: FrameOrder,
  frames: readonly number[],
  startAtOrBefore = Infinity,
): DecodeSpan {
  let lo = Infinity;
  let hi = -1;
  for (const f of frames) {
    const d = order.decodeOf[f]!;
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  // The last keyframe at or before the earliest needed sample starts a decodable run...
  let first = Math.max(0, Math.min(lo, startAtOrBefore));
  while (first > 0 && !samples.keyframe[first]) first--;
  // ...unless the GOP is open (an HEVC CRA, an H.264 recovery point): a needed frame after the
  // keyframe in decode order but shown before it is a leading picture that references the GOP
  // before, which a decoder starting at the keyframe drops. Start a keyframe earlier.
  const leading = (k: number) =>
    frames.some((f) => order.decodeOf[f]! > k && samples.pts[order.decodeOf[f]!]! < samples.pts[k]!);
  while (first > 0 && leading(first)) {
    first--;
    while (first > 0 && !samples.keyframe[first]) first--;
  }
  let start = Infinity;
  let end = 0;
  let sampleBytes = 0;
  for (let d = first; d <= hi; d++) {
    const off = samples.offset[d]!;
    const size = samples.size[d]!;
    if (off < start) start = off;
    if (off + size > end) end = off + size;
    sampleBytes += size;
  }
  return { firstSample: first, endSample: hi + 1, offset: start, length: end - start, sampleBytes };
}
