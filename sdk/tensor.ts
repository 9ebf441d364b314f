import type { DecodedClip } from "./pipeline/decode.js";
import { ARRAY_DTYPES } from "./pipeline/array-task.js";
import { SdkError } from "./errors.js";

export type TensorData =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

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

/** Where a batch's bytes come from and how they are laid out, before any copy. */
export interface BatchLayout {
  readonly shape: readonly number[];
  readonly dtype: string;
  readonly pixelFormat: string;
  /** Bytes of the whole batch: the frames back to back, clip after clip. */
  readonly byteLength: number;
  /** Every frame's bytes, in batch order. */
  readonly frames: readonly Uint8Array[];
}

/** Clips can share a batch only when their frames have the same layout. */
export function layoutOf(clip: DecodedClip): string {
  const f = clip.frames[0];
  return f ? `${clip.still ? "still:" : ""}${f.format}:${f.width}x${f.height}:${f.data.length}` : "empty";
}

const NPY_FORMAT = /^npy:[<|=]?([a-z]\d+):(.*)$/;

/**
 * Checks that decoded clips (same layout, same frame count) stack, and says how: shape, dtype
 * and the frames in order. Writers that place the frames themselves (the shared-memory bridge)
 * use it to skip the copy `stackClips` makes.
 *
 * @example
 * const { shape, frames } = batchLayout([a, b]); shape; // [2, 16, 224, 224, 3]
 */
export function batchLayout(clips: readonly DecodedClip[]): BatchLayout {
  const first = clips[0]?.frames[0];
  if (!first) throw new SdkError("ERR_EMPTY_BATCH", "Expected at least one clip with frames but received none");
  const t = clips[0]!.frames.length;
  const frameBytes = first.data.length;
  const frames: Uint8Array[] = [];
  for (const clip of clips) {
    if (clip.frames.length !== t || layoutOf(clip) !== layoutOf(clips[0]!)) {
      throw new SdkError(
        "ERR_BATCH_LAYOUT",
        `Expected clips of ${t} frames laid out as ${layoutOf(clips[0]!)} but received ${clip.frames.length} as ${layoutOf(clip)}`,
      );
    }
    for (const f of clip.frames) frames.push(f.data);
  }
  const byteLength = clips.length * t * frameBytes;
  const npy = NPY_FORMAT.exec(first.format);
  if (npy) {
    const dims = npy[2] ? npy[2].split("x").map(Number) : [];
    return {
      shape: [clips.length, ...dims],
      dtype: ARRAY_DTYPES.get(npy[1]!)!.name,
      pixelFormat: first.format,
      byteLength,
      frames,
    };
  }
  // Images have no time axis: [B, H, W, 3] (rgb24) or [B, bytesPerImage] (native).
  const frameShape = first.format === "rgb24" ? [first.height, first.width, 3] : [frameBytes];
  const shape = clips[0]!.still ? [clips.length, ...frameShape] : [clips.length, t, ...frameShape];
  return { shape, dtype: "uint8", pixelFormat: first.format, byteLength, frames };
}

/**
 * Stacks decoded clips (same layout, same frame count) into one tensor: into `buffer` (at least
 * `layout.byteLength` bytes, e.g. one a BatchPool lends) when given, else into fresh memory.
 *
 * @example
 * const t = stackClips([a, b]); t.shape; // [2, 16, 224, 224, 3]
 */
export function stackClips(
  clips: readonly DecodedClip[],
  layout: BatchLayout = batchLayout(clips),
  buffer?: ArrayBuffer,
): Tensor {
  if (buffer && buffer.byteLength < layout.byteLength) {
    throw new SdkError(
      "ERR_BATCH_LAYOUT",
      `Expected a buffer of at least ${layout.byteLength} bytes but received ${buffer.byteLength}`,
    );
  }
  const data = buffer ? new Uint8Array(buffer, 0, layout.byteLength) : new Uint8Array(layout.byteLength);
  let at = 0;
  for (const f of layout.frames) {
    data.set(f, at);
    at += f.length;
  }
  return tensorOver(data, layout);
}

/**
 * The tensor of `layout` over bytes already in place (`layout.byteLength` of them, e.g. frames
 * decoded straight into a batch buffer): no copy.
 *
 * @example
 * const t = tensorOver(bytes, batchLayout([a, b]));
 */
export function tensorOver(data: Uint8Array<ArrayBuffer>, layout: BatchLayout): Tensor {
  const { shape, dtype, pixelFormat } = layout;
  const npy = NPY_FORMAT.exec(pixelFormat);
  if (npy) {
    const { ctor } = ARRAY_DTYPES.get(npy[1]!)!;
    const typed = new ctor(data.buffer, data.byteOffset, data.byteLength / ctor.BYTES_PER_ELEMENT);
    return { data: typed, shape, dtype, device: "cpu", pixelFormat, toHost: () => typed };
  }
  return { data, shape, dtype, device: "cpu", pixelFormat, toHost: () => data };
}
