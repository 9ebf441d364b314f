import type { SampleTableV1 } from "../schema/index.js";

/**
 * Maps between presentation order (what a clip's frame numbers mean) and decode order (how
 * the index lists samples). Frames are numbered 0-based by ascending pts, ties by dts.
 */
export interface FrameOrder {
  /** decodeOf[frame] = the sample (decode-order index) that shows that frame. */
  readonly decodeOf: Uint32Array;
  /** frameOf[sample] = its presentation index. */
  readonly frameOf: Uint32Array;
  /** Presentation indices of keyframes, ascending. */
  readonly keyframes: readonly number[];
}

/**
 * @example
 * const order = frameOrder(index.video!.samples); order.decodeOf[0]; // the sample shown first
 */
export function frameOrder(samples: SampleTableV1): FrameOrder {
  const n = samples.pts.length;
  const byPts = Array.from({ length: n }, (_, i) => i).sort(
    (a, b) => samples.pts[a]! - samples.pts[b]! || samples.dts[a]! - samples.dts[b]!,
  );
  const decodeOf = Uint32Array.from(byPts);
  const frameOf = new Uint32Array(n);
  decodeOf.forEach((d, f) => (frameOf[d] = f));
  const keyframes: number[] = [];
  for (let d = 0; d < n; d++) if (samples.keyframe[d]) keyframes.push(frameOf[d]!);
  keyframes.sort((a, b) => a - b);
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
 * The smallest decodable run of samples that shows `frames` (presentation indices).
 *
 * @example
 * const span = decodeSpan(samples, order, [24, 25, 26, 27]);
 */
export function decodeSpan(samples: SampleTableV1, order: FrameOrder, frames: readonly number[]): DecodeSpan {
  let lo = Infinity;
  let hi = -1;
  for (const f of frames) {
    const d = order.decodeOf[f]!;
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  // Closed GOPs: the last keyframe at or before the earliest needed sample starts a decodable run.
  let first = lo;
  while (first > 0 && !samples.keyframe[first]) first--;
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
