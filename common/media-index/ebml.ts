/**
 * EBML (the binary format of Matroska and WebM) read with range reads: element headers and
 * small elements through a window that moves forward, so walking a file's clusters costs one
 * request per window, not one per element, and holds one window in memory.
 */
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import type { HeadCachedReader } from "./range-reader.js";

/** An element's ID (with its length marker bits, as the spec writes IDs), where its data starts, and its size. */
export interface Element {
  readonly id: number;
  readonly start: number;
  readonly dataStart: number;
  /** Undefined for the "unknown size" of a live-written Segment or Cluster. */
  readonly size: number | undefined;
}

/** Bytes per window: what a walk over clusters reads per request. */
export const WINDOW_BYTES = 4 << 20;

const corrupt = (message: string) => new MediaIndexError(IndexErrorCode.CORRUPT, message);

/** Reads forward through an object one window at a time. */
export class Window {
  private start = 0;
  private bytes: Uint8Array = new Uint8Array(0);
  constructor(
    readonly reader: HeadCachedReader,
    private readonly windowBytes = WINDOW_BYTES,
  ) {}

  /** `length` bytes at `offset`, from the window when it holds them (fewer at the end of the object). */
  async at(offset: number, length: number): Promise<Uint8Array> {
    const end = Math.min(offset + length, this.reader.size);
    if (offset < this.start || end > this.start + this.bytes.length) {
      this.start = offset;
      this.bytes = await this.reader.read(
        offset,
        Math.min(Math.max(length, this.windowBytes), this.reader.size - offset),
      );
    }
    return this.bytes.subarray(offset - this.start, end - this.start);
  }
}

/** A variable-length integer at `bytes[at]`: its length and value; `marker` keeps the length bits (element IDs). */
export function vint(
  bytes: Uint8Array,
  at: number,
  marker = false,
): { length: number; value: number; unknown: boolean } | undefined {
  const first = bytes[at];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  if (at + length > bytes.length) return undefined;
  let value = marker ? first : first & (0xff >> length);
  let ones = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + bytes[at + i]!;
    ones &&= bytes[at + i] === 0xff;
  }
  return { length, value, unknown: !marker && ones };
}

/** The element header at `offset`; undefined at the end of the object. */
export async function elementAt(window: Window, offset: number): Promise<Element | undefined> {
  if (offset >= window.reader.size) return undefined;
  const head = await window.at(offset, 12);
  const id = vint(head, 0, true);
  if (!id || id.length > 4) throw corrupt(`invalid EBML element ID at byte ${offset}`);
  const size = vint(head, id.length);
  if (!size) {
    if (offset + head.length >= window.reader.size)
      throw new MediaIndexError(IndexErrorCode.TRUNCATED, `EBML element header at byte ${offset} is cut off`);
    throw corrupt(`invalid EBML element size at byte ${offset}`);
  }
  if (!size.unknown && !Number.isSafeInteger(size.value))
    throw corrupt(`EBML element at byte ${offset} declares ${size.value} bytes`);
  return {
    id: id.value,
    start: offset,
    dataStart: offset + id.length + size.length,
    size: size.unknown ? undefined : size.value,
  };
}

/** Big-endian unsigned integer of an element's data (at most 8 bytes; above 2^53 it is corrupt). */
export function readUint(data: Uint8Array): number {
  if (data.length > 8) throw corrupt(`an EBML unsigned integer of ${data.length} bytes`);
  let v = 0;
  for (const b of data) v = v * 256 + b;
  if (!Number.isSafeInteger(v)) throw corrupt("an EBML unsigned integer beyond 2^53");
  return v;
}

/** Big-endian IEEE float of 4 or 8 bytes (0 for an empty element). */
export function readFloat(data: Uint8Array): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data.length === 4) return view.getFloat32(0);
  if (data.length === 8) return view.getFloat64(0);
  if (data.length === 0) return 0;
  throw corrupt(`an EBML float of ${data.length} bytes`);
}

/** The children of a master element held in memory: id → every child's data, in order. */
export function children(data: Uint8Array, where: string): Map<number, Uint8Array[]> {
  const out = new Map<number, Uint8Array[]>();
  let at = 0;
  while (at < data.length) {
    const id = vint(data, at, true);
    const size = id && vint(data, at + id.length);
    if (!id || !size || size.unknown || at + id.length + size.length + size.value > data.length)
      throw corrupt(`malformed element inside ${where}`);
    const start = at + id.length + size.length;
    const list = out.get(id.value) ?? [];
    list.push(data.subarray(start, start + size.value));
    out.set(id.value, list);
    at = start + size.value;
  }
  return out;
}
