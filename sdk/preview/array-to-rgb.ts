/**
 * `.npy` array "frames" as pictures: an [H, W, 3|4] uint8 array is an image as is; anything else
 * is shown as gray, its last axis across and the others stacked down, each value scaled from the
 * array's own minimum and maximum (NaN black), so depth maps, masks and feature grids all show.
 */
import { describeReceived } from "../../common/errors.js";
import { SdkError } from "../errors.js";

/** The largest side of an array picture (a contact sheet's tile); a 1-D array of 10^6 values is still a small picture. */
const MAX_SIDE = 256;

const VIEWS: Record<string, (b: ArrayBuffer) => ArrayLike<number | bigint>> = {
  b1: (b) => new Uint8Array(b),
  u1: (b) => new Uint8Array(b),
  i1: (b) => new Int8Array(b),
  u2: (b) => new Uint16Array(b),
  i2: (b) => new Int16Array(b),
  u4: (b) => new Uint32Array(b),
  i4: (b) => new Int32Array(b),
  f4: (b) => new Float32Array(b),
  f8: (b) => new Float64Array(b),
  u8: (b) => new BigUint64Array(b),
  i8: (b) => new BigInt64Array(b),
};

/** Parses the batcher's tag of an array frame, `npy:<dtype>:<shape>`, e.g. `npy:<f4:64x64`. */
export function parseArrayFormat(format: string): { dtype: string; shape: number[] } | undefined {
  const m = /^npy:[<|=]?([a-z]\d+):([\dx]*)$/.exec(format);
  if (!m) return undefined;
  return { dtype: m[1]!, shape: m[2] === "" ? [] : m[2]!.split("x").map(Number) };
}

/**
 * The array as packed RGB24 at most MAX_SIDE / `scale` on a side (nearest sampling).
 *
 * @example
 * arrayToRgb({ data, width: 0, height: 0, format: "npy:<f4:48x64" }, 1); // 64 × 48 gray
 */
export function arrayToRgb(
  f: { readonly data: Uint8Array; readonly format: string },
  scale = 1,
): { data: Uint8Array; width: number; height: number } {
  const parsed = parseArrayFormat(f.format);
  const view = parsed && VIEWS[parsed.dtype];
  if (!parsed || !view) {
    throw new SdkError(
      "ERR_PREVIEW_FORMAT",
      `Expected a numeric .npy array for a picture but received ${describeReceived(f.format)}`,
    );
  }
  const { dtype, shape } = parsed;
  const last = shape.at(-1) ?? 1;
  const image = dtype === "u1" && shape.length === 3 && (last === 3 || last === 4);
  const cols = image ? shape[1]! : Math.max(1, last);
  const count = shape.reduce((a, b) => a * b, 1);
  const rows = image ? shape[0]! : Math.max(1, Math.ceil(count / cols));
  const step = Math.max(scale, Math.ceil(Math.max(rows, cols) / MAX_SIDE));
  const width = Math.max(1, Math.floor(cols / step));
  const height = Math.max(1, Math.floor(rows / step));
  const out = new Uint8Array(width * height * 3);
  // A copy: the array's bytes may sit at an offset no typed view of its dtype can start at.
  const values = view(f.data.slice().buffer);
  if (image) {
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (Math.floor(y * step) * cols + Math.floor(x * step)) * last;
        out.set(f.data.subarray(i, i + 3), (y * width + x) * 3);
      }
    }
    return { data: out, width, height };
  }
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = Number(values[i]);
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const span = hi > lo ? hi - lo : 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = Math.floor(y * step) * cols + Math.floor(x * step);
      const v = i < values.length ? Number(values[i]) : Number.NaN;
      const g = Number.isNaN(v) ? 0 : Math.round(((v - lo) / span) * 255);
      out.fill(g, (y * width + x) * 3, (y * width + x) * 3 + 3);
    }
  }
  return { data: out, width, height };
}
