/**
 * One slot of a slab file: a 4 KiB header, then the block's data at a 4 KiB-aligned offset so
 * O_DIRECT and cuFile can read it in place. The header names the block (object key, ETag, block
 * index), its length, the CRC-32 of its data and a write sequence number, so the index is rebuilt
 * from the slabs after a restart (newest copy of a block wins) with no separate journal to keep
 * in step. The header has a CRC of its own: a header torn by a crash reads as an empty slot.
 */
import { crc32 } from "node:zlib";

export const ALIGN = 4096;
export const SLOT_HEADER = 4096;
const MAGIC = Buffer.from("ECSLOT01", "latin1");
// magic 8 | header crc 4 | slot bytes 4 | index 4 | data length 4 | data crc 4 | key length 4 | etag length 4 | 0 4 | seq 8
const FIXED = 48;

export interface SlotHeader {
  readonly key: string;
  readonly etag: string;
  readonly index: number;
  readonly dataLength: number;
  readonly dataCrc: number;
  readonly slotBytes: number;
  readonly seq: bigint;
}

export function alignUp(n: number, to = ALIGN): number {
  return Math.ceil(n / to) * to;
}

/** Bytes one slot takes for blocks of `blockSize`: the header plus the data, 4 KiB-aligned. */
export function slotBytesFor(blockSize: number): number {
  return SLOT_HEADER + alignUp(blockSize);
}

/** A block's object key and ETag as a header spells them, encoded once for every block of the object. */
export interface SlotName {
  readonly key: string;
  readonly etag: string;
  readonly keyBytes: Buffer;
  readonly etagBytes: Buffer;
}

/** The name for blocks of (key, etag), or undefined when it does not fit in a header. */
export function slotName(key: string, etag: string): SlotName | undefined {
  const keyBytes = Buffer.from(key);
  const etagBytes = Buffer.from(etag);
  return FIXED + keyBytes.length + etagBytes.length > SLOT_HEADER ? undefined : { key, etag, keyBytes, etagBytes };
}

/**
 * Writes a block's header into `buf` (SLOT_HEADER bytes, zeroed). `name` spells `h.key` and
 * `h.etag` (from slotName).
 */
export function writeSlotHeader(buf: Buffer, name: SlotName, h: Omit<SlotHeader, "key" | "etag">): void {
  const end = FIXED + name.keyBytes.length + name.etagBytes.length;
  MAGIC.copy(buf, 0);
  buf.writeUInt32LE(h.slotBytes, 12);
  buf.writeUInt32LE(h.index, 16);
  buf.writeUInt32LE(h.dataLength, 20);
  buf.writeUInt32LE(h.dataCrc, 24);
  buf.writeUInt32LE(name.keyBytes.length, 28);
  buf.writeUInt32LE(name.etagBytes.length, 32);
  buf.writeBigUInt64LE(h.seq, 40);
  name.keyBytes.copy(buf, FIXED);
  name.etagBytes.copy(buf, FIXED + name.keyBytes.length);
  buf.writeUInt32LE(crc32(buf.subarray(12, end)), 8);
}

/** True for a slot never written: its header area reads as zeros (a hole in the slab). */
export function isBlank(buf: Buffer): boolean {
  return buf.subarray(0, FIXED).every((b) => b === 0);
}

/** Parses and checks a header; undefined when it is not a complete, intact slot header. */
export function decodeSlotHeader(buf: Buffer): SlotHeader | undefined {
  if (buf.length < FIXED || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const keyLen = buf.readUInt32LE(28);
  const etagLen = buf.readUInt32LE(32);
  const end = FIXED + keyLen + etagLen;
  if (end > Math.min(SLOT_HEADER, buf.length) || crc32(buf.subarray(12, end)) !== buf.readUInt32LE(8)) return undefined;
  return {
    key: buf.toString("utf8", FIXED, FIXED + keyLen),
    etag: buf.toString("utf8", FIXED + keyLen, end),
    index: buf.readUInt32LE(16),
    dataLength: buf.readUInt32LE(20),
    dataCrc: buf.readUInt32LE(24),
    slotBytes: buf.readUInt32LE(12),
    seq: buf.readBigUInt64LE(40),
  };
}
