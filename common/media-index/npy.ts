import type { ArrayInfoV1 } from "../schema/index.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import type { HeadCachedReader } from "./range-reader.js";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59];

/**
 * The longest header read: numpy writes a dict of a few hundred bytes and its own reader refuses
 * headers over 10,000 bytes unless told otherwise; a v2/v3 length field says up to 4 GiB.
 */
const MAX_HEADER_BYTES = 1 << 20;

/** True when the bytes start with the NumPy .npy magic. */
export function looksLikeNpy(head: Uint8Array): boolean {
  return head.length >= 10 && MAGIC.every((b, i) => head[i] === b);
}

function itemSize(dtype: string): number | undefined {
  const m = /^[<>|=]?([a-zA-Z])(\d+)$/.exec(dtype);
  if (!m) return undefined;
  return Number(m[2]) * (m[1] === "U" ? 4 : 1);
}

/**
 * dtype, shape and data offset from an .npy header (format 1.0, 2.0 or 3.0); the data is
 * never read, only checked to fit in the object.
 */
export async function indexNpy(reader: HeadCachedReader): Promise<ArrayInfoV1> {
  const pre = await reader.read(0, 12);
  const major = pre[6]!;
  const v = new DataView(pre.buffer, pre.byteOffset, pre.byteLength);
  const [headerLength, headerStart] =
    major === 1 ? [v.getUint16(8, true), 10] : major === 2 || major === 3 ? [v.getUint32(8, true), 12] : [-1, 0];
  if (headerLength < 0) throw new MediaIndexError(IndexErrorCode.CORRUPT, `unknown .npy format version ${major}`);
  if (headerLength > MAX_HEADER_BYTES)
    throw new MediaIndexError(
      IndexErrorCode.CORRUPT,
      `.npy header declares ${headerLength} bytes; a header holds a dtype/shape dict of at most ${MAX_HEADER_BYTES}`,
    );
  const header = new TextDecoder().decode(await reader.read(headerStart, headerLength));
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header)?.[1];
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined) {
    throw new MediaIndexError(
      IndexErrorCode.CORRUPT,
      `.npy header is not a simple dtype/shape dict: ${JSON.stringify(header.trim().slice(0, 120))}`,
    );
  }
  const shape = shapeText
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  if (shape.some((d) => !Number.isSafeInteger(d) || d < 0))
    throw new MediaIndexError(IndexErrorCode.CORRUPT, `.npy shape (${shapeText}) is not a tuple of sizes`);
  const dataOffset = headerStart + headerLength;
  const item = itemSize(descr);
  if (item !== undefined) {
    const need = dataOffset + shape.reduce((a, b) => a * b, 1) * item;
    if (need > reader.size)
      throw new MediaIndexError(
        IndexErrorCode.TRUNCATED,
        `.npy of shape (${shape.join(", ")}) ${descr} needs ${need} bytes but the object has ${reader.size}`,
      );
  }
  return { dtype: descr, shape, fortranOrder: fortran === "True", dataOffset };
}
