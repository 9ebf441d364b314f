/**
 * .npy objects: one object is one sample, read whole (header excluded) and handed over as the
 * typed array its dtype names; no decode stage. Batches stack them into [B, ...shape].
 */
import { objectOf } from "../source/source.js";
import type { ArrayInfoV1 } from "../../common/schema/index.js";
import type { ClipInfo } from "../clip-info.js";
import { ClipError } from "../errors.js";
import type { DecodedClip } from "./decode.js";
import { finish, readExactly, type ClipContext, type ClipOutcome, type ScheduledClip } from "./clip-context.js";

type TypedArrayCtor =
  | Int8ArrayConstructor
  | Uint8ArrayConstructor
  | Int16ArrayConstructor
  | Uint16ArrayConstructor
  | Int32ArrayConstructor
  | Uint32ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor
  | BigInt64ArrayConstructor
  | BigUint64ArrayConstructor;

/** numpy dtype kind+size → the typed array and its name; little-endian (or byte-sized) only, as x86 and ARM hosts read them. */
export const ARRAY_DTYPES = new Map<string, { name: string; ctor: TypedArrayCtor }>([
  ["b1", { name: "bool", ctor: Uint8Array }],
  ["i1", { name: "int8", ctor: Int8Array }],
  ["u1", { name: "uint8", ctor: Uint8Array }],
  ["i2", { name: "int16", ctor: Int16Array }],
  ["u2", { name: "uint16", ctor: Uint16Array }],
  ["i4", { name: "int32", ctor: Int32Array }],
  ["u4", { name: "uint32", ctor: Uint32Array }],
  ["f4", { name: "float32", ctor: Float32Array }],
  ["f8", { name: "float64", ctor: Float64Array }],
  ["i8", { name: "int64", ctor: BigInt64Array }],
  ["u8", { name: "uint64", ctor: BigUint64Array }],
]);

/** Pixel-format tag of an array "frame": what the batcher stacks by. */
export function arrayFormat(info: ArrayInfoV1): string {
  return `npy:${info.dtype}:${info.shape.join("x")}`;
}

/** Byte range of an array's data, checked for a dtype and layout the SDK hands over as is. */
export function arraySpan(key: string, info: ArrayInfoV1): { offset: number; length: number; dtype: string } {
  const m = /^([<|=]?)([a-z])(\d+)$/.exec(info.dtype);
  const entry = m ? ARRAY_DTYPES.get(`${m[2]}${m[3]}`) : undefined;
  if (!m || !entry) {
    throw new ClipError(
      "ERR_ARRAY_DTYPE",
      key,
      `Expected a little-endian numeric dtype (e.g. "<f4") but received ${JSON.stringify(info.dtype)}`,
    );
  }
  if (info.fortranOrder)
    throw new ClipError("ERR_ARRAY_LAYOUT", key, "Expected a C-ordered array but received fortran_order True");
  const count = info.shape.reduce((a, b) => a * b, 1);
  return { offset: info.dataOffset, length: count * entry.ctor.BYTES_PER_ELEMENT, dtype: entry.name };
}

/** The array as a one-"frame" clip; the tensor stage turns it into its typed array. */
export function arrayClip(info: ArrayInfoV1, bytes: Uint8Array): DecodedClip {
  return { device: "cpu", frames: [{ data: bytes, pts: 0, width: 0, height: 0, format: arrayFormat(info) }] };
}

/** An .npy object: its data bytes, whole, as one sample. */
export async function produceArray(ctx: ClipContext, clip: ScheduledClip, info: ArrayInfoV1): Promise<ClipOutcome> {
  const object = (await objectOf(ctx.listing.objects, clip.ref.object))!;
  const key = object.key;
  const span = arraySpan(key, info);
  const bytes = span.length === 0 ? new Uint8Array(0) : await readExactly(ctx, object, span.offset, span.length);
  ctx.onNeeded(span.length);
  const base: ClipInfo = { key, start: 0, frames: 1, stride: 1, pts: [], position: clip.position, labels: {} };
  return finish(ctx, clip, base, arrayClip(info, bytes));
}
