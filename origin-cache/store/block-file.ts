/**
 * One cached block on disk: a 4 KiB-aligned header, then the data at a 4 KiB-aligned offset
 * so O_DIRECT and cuFile can read it in place. The header names the block (object key, ETag,
 * block index) so the index can be rebuilt from the directory, and holds a CRC-32 per chunk
 * so a read verifies only the chunks it touches.
 */
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { crc32 } from "node:zlib";

export const ALIGN = 4096;
const MAGIC = Buffer.from("ECBLK001", "latin1");
const FIXED = 40;

export interface BlockHeader {
  readonly key: string;
  readonly etag: string;
  readonly index: number;
  readonly dataLength: number;
  readonly chunkSize: number;
  readonly headerSize: number;
  readonly crcs: Uint32Array;
}

export function alignUp(n: number, to = ALIGN): number {
  return Math.ceil(n / to) * to;
}

/** Bytes the block occupies in the directory, which is what `maxBytes` bounds. */
export function blockFileSize(key: string, etag: string, dataLength: number, chunkSize: number): number {
  return headerSizeFor(key, etag, dataLength, chunkSize) + alignUp(dataLength);
}

function headerSizeFor(key: string, etag: string, dataLength: number, chunkSize: number): number {
  const chunks = Math.ceil(dataLength / chunkSize);
  return alignUp(FIXED + Buffer.byteLength(key) + Buffer.byteLength(etag) + 4 * chunks);
}

function encodeHeader(key: string, etag: string, index: number, data: Uint8Array, chunkSize: number): Buffer {
  const keyBytes = Buffer.from(key);
  const etagBytes = Buffer.from(etag);
  const chunks = Math.ceil(data.length / chunkSize);
  const size = headerSizeFor(key, etag, data.length, chunkSize);
  const h = Buffer.alloc(size);
  MAGIC.copy(h, 0);
  h.writeUInt32LE(size, 8);
  h.writeUInt32LE(chunkSize, 12);
  h.writeUInt32LE(index, 16);
  h.writeUInt32LE(data.length, 20);
  h.writeUInt32LE(keyBytes.length, 24);
  h.writeUInt32LE(etagBytes.length, 28);
  h.writeUInt32LE(chunks, 32);
  keyBytes.copy(h, FIXED);
  etagBytes.copy(h, FIXED + keyBytes.length);
  let at = FIXED + keyBytes.length + etagBytes.length;
  for (let c = 0; c < chunks; c++, at += 4) {
    h.writeUInt32LE(crc32(data.subarray(c * chunkSize, Math.min(data.length, (c + 1) * chunkSize))), at);
  }
  h.writeUInt32LE(crc32(h), 36);
  return h;
}

/** Parses and checks a header; undefined when it is not a complete, intact ec block header. */
export function decodeHeader(buf: Buffer): BlockHeader | undefined {
  if (buf.length < FIXED || !buf.subarray(0, 8).equals(MAGIC)) return undefined;
  const headerSize = buf.readUInt32LE(8);
  if (headerSize % ALIGN !== 0 || headerSize > buf.length) return undefined;
  const h = Buffer.from(buf.subarray(0, headerSize));
  const stored = h.readUInt32LE(36);
  h.writeUInt32LE(0, 36);
  if (crc32(h) !== stored) return undefined;
  const chunkSize = h.readUInt32LE(12);
  const keyLen = h.readUInt32LE(24);
  const etagLen = h.readUInt32LE(28);
  const chunks = h.readUInt32LE(32);
  const dataLength = h.readUInt32LE(20);
  if (chunkSize === 0 || chunks !== Math.ceil(dataLength / chunkSize)) return undefined;
  const crcAt = FIXED + keyLen + etagLen;
  const crcs = new Uint32Array(chunks);
  for (let c = 0; c < chunks; c++) crcs[c] = h.readUInt32LE(crcAt + 4 * c);
  return {
    key: h.toString("utf8", FIXED, FIXED + keyLen),
    etag: h.toString("utf8", FIXED + keyLen, crcAt),
    index: h.readUInt32LE(16),
    dataLength,
    chunkSize,
    headerSize,
    crcs,
  };
}

/**
 * Writes the block to `tmpPath`, fsyncs it and renames it to `finalPath`, so the final name only
 * ever holds a complete block. The directory is not fsynced: a rename lost to a power cut is a miss.
 */
export async function writeBlockFile(
  tmpPath: string,
  finalPath: string,
  block: { key: string; etag: string; index: number; data: Uint8Array; chunkSize: number },
): Promise<BlockHeader> {
  const header = encodeHeader(block.key, block.etag, block.index, block.data, block.chunkSize);
  const fh = await open(tmpPath, "wx");
  try {
    const pad = alignUp(block.data.length) - block.data.length;
    const parts = pad > 0 ? [header, block.data, Buffer.alloc(pad)] : [header, block.data];
    // A nearly full disk takes part of a write and reports no error: the block would be torn.
    const { bytesWritten } = await fh.writev(parts);
    const expected = parts.reduce((n, p) => n + p.length, 0);
    if (bytesWritten !== expected) {
      throw Object.assign(new Error(`ENOSPC: wrote ${bytesWritten} of ${expected} bytes of a block (disk full)`), { code: "ENOSPC" });
    }
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => {});
    await unlink(tmpPath).catch(() => {});
    throw err;
  }
  await fh.close();
  await rename(tmpPath, finalPath);
  return decodeHeader(header) as BlockHeader;
}

/** Reads only the header of a block file; undefined when missing or not intact. */
export async function readBlockHeader(path: string): Promise<{ header: BlockHeader; fileSize: number } | undefined> {
  let fh;
  try {
    fh = await open(path, "r");
  } catch {
    return undefined;
  }
  try {
    const { size } = await fh.stat();
    const first = Buffer.alloc(ALIGN);
    await fh.read(first, 0, ALIGN, 0);
    const headerSize = first.readUInt32LE(8);
    let buf = first;
    if (headerSize > ALIGN && headerSize <= 1 << 20) {
      buf = Buffer.alloc(headerSize);
      await fh.read(buf, 0, headerSize, 0);
    }
    const header = decodeHeader(buf);
    if (!header || size !== header.headerSize + alignUp(header.dataLength)) return undefined;
    return { header, fileSize: size };
  } finally {
    await fh.close();
  }
}

/**
 * Reads `[start, start + length)` of the block's data from an open block file and verifies every
 * chunk it touches. Returns undefined when the file is short or any chunk fails its checksum.
 */
export async function readBlockRange(fh: FileHandle, header: BlockHeader, start: number, length: number): Promise<Buffer | undefined> {
  const { chunkSize, dataLength, headerSize, crcs } = header;
  const first = Math.floor(start / chunkSize);
  const last = Math.floor((start + length - 1) / chunkSize);
  const from = first * chunkSize;
  const to = Math.min(dataLength, (last + 1) * chunkSize);
  const buf = Buffer.allocUnsafe(to - from);
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await fh.read(buf, got, buf.length - got, headerSize + from + got);
    if (bytesRead === 0) return undefined;
    got += bytesRead;
  }
  for (let c = first; c <= last; c++) {
    const a = c * chunkSize - from;
    if (crc32(buf.subarray(a, Math.min(buf.length, a + chunkSize))) !== crcs[c]) return undefined;
  }
  return buf.subarray(start - from, start - from + length);
}
