/**
 * Crafted media whose declared sizes lie: bytes written by the test, no ffmpeg, no node:
 * imports, so the same files reach buildIndex in Node and the edge in workerd.
 */

/** An EBML element: its ID bytes, an 8-byte size vint (or `declared` instead of the data's length), the data. */
export function ebml(id: number, data: Uint8Array, declared = data.length): Uint8Array {
  const idBytes: number[] = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) idBytes.unshift(v & 0xff);
  const size = [0x01];
  for (let i = 6; i >= 0; i--) size.push(Math.floor(declared / 2 ** (8 * i)) & 0xff);
  return concat([Uint8Array.from(idBytes), Uint8Array.from(size), data]);
}

const uint = (id: number, v: number) => ebml(id, Uint8Array.of(v >> 8, v & 0xff));
const text = (id: number, s: string) => ebml(id, new TextEncoder().encode(s));

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
}

/** EBML header and the start of a Segment of unknown size holding one video track of `codecId`. */
export function webmHead(codecId = "V_VP9", width = 64, height = 64): Uint8Array {
  const header = ebml(0x1a45dfa3, text(0x4282, "webm"));
  const video = ebml(0xe0, concat([uint(0xb0, width), uint(0xba, height)]));
  const entry = ebml(0xae, concat([uint(0xd7, 1), uint(0x83, 1), text(0x86, codecId), video]));
  const tracks = ebml(0x1654ae6b, entry);
  // Segment of unknown size: 0x01 followed by seven 0xff.
  const segment = Uint8Array.of(0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
  return concat([header, segment, tracks]);
}

/** A Cluster of unknown size whose Timestamp declares `declared` bytes, followed by `pad` zero bytes. */
export function webmHugeTimestamp(declared: number, pad: number): Uint8Array {
  const cluster = Uint8Array.of(0x1f, 0x43, 0xb6, 0x75, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
  const timestamp = ebml(0xe7, new Uint8Array(0), declared);
  return concat([webmHead(), cluster, timestamp, new Uint8Array(pad)]);
}

/** One Cluster of `blocks` SimpleBlocks of one byte each on track 1 (7 bytes a block). */
export function webmTinyBlocks(blocks: number): Uint8Array {
  const block = Uint8Array.of(0xa3, 0x85, 0x81, 0x00, 0x00, 0x80, 0x00);
  const body = new Uint8Array(block.length * blocks);
  for (let i = 0; i < blocks; i++) body.set(block, i * block.length);
  const cluster = ebml(0x1f43b675, concat([ebml(0xe7, Uint8Array.of(0)), body]));
  return concat([webmHead(), cluster]);
}

const TS = 188;

function tsPacket(pid: number, start: boolean, payload: Uint8Array, cc: number): Uint8Array {
  const p = new Uint8Array(TS).fill(0xff);
  p.set([0x47, (start ? 0x40 : 0) | (pid >> 8), pid & 0xff, 0x10 | (cc & 0x0f)]);
  p.set(payload.subarray(0, TS - 4), 4);
  return p;
}

/**
 * A transport stream with one H.264 PID whose first PES packet is never followed by another:
 * its access unit runs to the end of the object, `bytes` long.
 */
export function tsEndlessAccessUnit(bytes: number): Uint8Array {
  const pat = Uint8Array.of(0, 0x00, 0xb0, 13, 0, 1, 0xc1, 0, 0, 0, 1, 0xf0, 0x00, 0, 0, 0, 0);
  const pmt = Uint8Array.of(
    0,
    0x02,
    0xb0,
    18,
    0,
    1,
    0xc1,
    0,
    0,
    0xe1,
    0x00,
    0xf0,
    0,
    0x1b,
    0xe1,
    0x00,
    0xf0,
    0,
    0,
    0,
    0,
    0,
  );
  const pes = Uint8Array.of(0, 0, 1, 0xe0, 0, 0, 0x80, 0x80, 5, 0x21, 0, 1, 0, 1, 0, 0, 0, 1, 0x65);
  const packets = Math.max(4, Math.floor(bytes / TS));
  const out = new Uint8Array(packets * TS);
  out.set(tsPacket(0, true, pat, 0), 0);
  out.set(tsPacket(0x1000, true, pmt, 0), TS);
  out.set(tsPacket(0x100, true, pes, 0), 2 * TS);
  const filler = new Uint8Array(TS - 4).fill(0xab);
  for (let n = 3; n < packets; n++) out.set(tsPacket(0x100, false, filler, n), n * TS);
  return out;
}

/** An .npy of format 2.0 whose header length field says `declared` bytes; a valid dict padded with spaces to it. */
export function npyLongHeader(declared: number): Uint8Array {
  const dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  const header = new Uint8Array(declared).fill(0x20);
  header.set(new TextEncoder().encode(dict));
  header[declared - 1] = 0x0a;
  const pre = Uint8Array.of(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 2, 0, 0, 0, 0, 0);
  new DataView(pre.buffer).setUint32(8, declared, true);
  return concat([pre, header, new Uint8Array(4)]);
}
