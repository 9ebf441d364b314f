import type { DecodedClip } from "./pipeline/decode.js";
import { ARRAY_DTYPES } from "./pipeline/array-task.js";
import { SdkError } from "./errors.js";

export type TensorData = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

/**
 * A dense batch. rgb24: shape [B, T, H, W, 3]; native: [B, T, bytesPerFrame] in `pixelFormat`;
 * images: [B, H, W, 3] (rgb24) or [B, bytesPerImage] (native); .npy arrays: [B, ...shape] as the
 * typed array of their dtype.
 */
export interface Tensor {
  readonly data: TensorData;
  readonly shape: readonly number[];
  /** "uint8" for video; the array's dtype ("float32", "int64", …) for .npy. */
  readonly dtype: string;
  readonly device: string;
  /** The frames' pixel format: "rgb24", or the decoder's own (e.g. "yuv420p"). */
  readonly pixelFormat: string;
  /** A host copy (already host memory on CPU: returns `data`). */
  toHost(): TensorData;
}

/** Clips can share a batch only when their frames have the same layout. */
export function layoutOf(clip: DecodedClip): string {
  const f = clip.frames[0];
  return f ? `${clip.still ? "still:" : ""}${f.format}:${f.width}x${f.height}:${f.data.length}` : "empty";
}

/**
 * Stacks decoded clips (same layout, same frame count) into one tensor.
 *
 * @example
 * const t = stackClips([a, b]); t.shape; // [2, 16, 224, 224, 3]
 */
export function stackClips(clips: readonly DecodedClip[]): Tensor {
  const first = clips[0]?.frames[0];
  if (!first) throw new SdkError("ERR_EMPTY_BATCH", "Expected at least one clip with frames but received none");
  const t = clips[0]!.frames.length;
  const frameBytes = first.data.length;
  const data = new Uint8Array(clips.length * t * frameBytes);
  let at = 0;
  for (const clip of clips) {
    if (clip.frames.length !== t || layoutOf(clip) !== layoutOf(clips[0]!)) {
      throw new SdkError("ERR_BATCH_LAYOUT", `Expected clips of ${t} frames laid out as ${layoutOf(clips[0]!)} but received ${clip.frames.length} as ${layoutOf(clip)}`);
    }
    for (const f of clip.frames) {
      data.set(f.data, at);
      at += frameBytes;
    }
  }
  const npy = /^npy:[<|=]?([a-z]\d+):(.*)$/.exec(first.format);
  if (npy) {
    const { name, ctor } = ARRAY_DTYPES.get(npy[1]!)!;
    const dims = npy[2] ? npy[2].split("x").map(Number) : [];
    const typed = new ctor(data.buffer, data.byteOffset, data.byteLength / ctor.BYTES_PER_ELEMENT);
    return { data: typed, shape: [clips.length, ...dims], dtype: name, device: "cpu", pixelFormat: first.format, toHost: () => typed };
  }
  // Images have no time axis: [B, H, W, 3] (rgb24) or [B, bytesPerImage] (native).
  const frameShape = first.format === "rgb24" ? [first.height, first.width, 3] : [frameBytes];
  const shape = clips[0]!.still ? [clips.length, ...frameShape] : [clips.length, t, ...frameShape];
  return { data, shape, dtype: "uint8", device: "cpu", pixelFormat: first.format, toHost: () => data };
}
