/**
 * Table pages as stored (before gzip; the head's SHA-256 covers these bytes). Version 3, the
 * one written: "ECTC", u32 version, u32 length of a JSON header (root, counts, error records),
 * padding to 8 bytes, then the columns of `entry-columns.ts` in SECTIONS order, little-endian.
 * In version 3 a page's etags may be stored apart (`etagForm: "apart"`, page-pins.ts): the
 * etag sections are then empty. Decoding makes typed-array views on the bytes, no object per
 * entry. Version 2 (the same layout, etags always inside) and version 1 (a JSON TablePageV1)
 * are still read; any other is refused with ERR_TABLE_PAGE_FORMAT.
 */
import { z } from "zod";
import { IndexErrorV1, type TableEntryV1 } from "../schema/index.js";
import { CODECS, type Columns, EntryColumns, fitsColumns, HAS, HAS_ALL, KINDS } from "./entry-columns.js";
import { decodePage } from "./page-decode.js";
import { TablePageFormatError } from "./page-errors.js";

export { TablePageFormatError };
export const PAGE_FORMAT_VERSION = 3;
const MAGIC = [0x45, 0x43, 0x54, 0x43]; // "ECTC"
const PREAMBLE = 12;

const PageHeaderV2 = z.object({
  root: z.string(),
  count: z.number().int().nonnegative(),
  keyframes: z.number().int().nonnegative(),
  keyBytes: z.number().int().nonnegative(),
  /**
   * "md5": every etag is a quoted MD5 (R2's single-part ETag), stored as its 16 bytes; "text",
   * UTF-8; "apart" (format 3 only): in the page's pins, not here.
   */
  etagForm: z.enum(["text", "md5", "apart"]),
  etagBytes: z.number().int().nonnegative(),
  /** [entry index, record] for each entry with an error record. */
  errors: z.array(z.tuple([z.number().int().nonnegative(), IndexErrorV1])),
});
type PageHeaderV2 = z.infer<typeof PageHeaderV2>;

/**
 * The sections of a page, in order (8-byte values first, so each stays aligned): per entry its
 * key's, etag's and keyframe list's lengths rather than offsets (lengths repeat, and gzip
 * takes them to almost nothing; offsets grow and do not compress).
 */
const SECTIONS = [
  ["size", 8],
  ["keyLength", 4],
  ["etagLength", 4],
  ["keyframeCount", 4],
  ["frames", 4],
  ["width", 4],
  ["height", 4],
  ["keyframes", 4],
  ["kind", 1],
  ["codec", 1],
  ["has", 1],
  ["keys", 1],
  ["etags", 1],
] as const;
type Section = (typeof SECTIONS)[number][0];

const pad8 = (n: number) => (n + 7) & ~7;

/** Elements of each section for a page of this header. */
function lengths(h: PageHeaderV2): Record<Section, number> {
  const n = h.count;
  const perEntry = { size: n, keyLength: n, etagLength: n, keyframeCount: n, frames: n, width: n, height: n };
  return { ...perEntry, keyframes: h.keyframes, kind: n, codec: n, has: n, keys: h.keyBytes, etags: h.etagBytes };
}

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const MD5_ETAG = /^"[0-9a-f]{32}"$/;

/** Lengths from end offsets. */
function lengthsOf(ends: Uint32Array): Uint32Array {
  const out = new Uint32Array(ends.length);
  for (let i = 0; i < ends.length; i++) out[i] = ends[i]! - (i === 0 ? 0 : ends[i - 1]!);
  return out;
}

/** End offsets from lengths, or undefined where they pass `total`. */
function endsOf(lengths: Uint32Array, total: number): Uint32Array | undefined {
  const out = new Uint32Array(lengths.length);
  let at = 0;
  for (let i = 0; i < lengths.length; i++) {
    at += lengths[i]!;
    if (at > total) return undefined;
    out[i] = at;
  }
  return at === total ? out : undefined;
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/**
 * A page's bytes: version 3 columns, or version 1 JSON where a number does not fit a column
 * (never so for real media: frames, dimensions and keyframes past 2^32). `apart`: the etags
 * are left out (the caller stores them as the page's pins, page-pins.ts); a JSON page always
 * holds them.
 *
 * @example
 * const bytes = encodePageBytes("gameplay", entries);
 */
export function encodePageBytes(
  root: string,
  entries: readonly TableEntryV1[],
  o: { readonly apart?: boolean } = {},
): Uint8Array {
  if (!littleEndian || !fitsColumns(entries))
    return new TextEncoder().encode(JSON.stringify({ version: 1, root, entries }));
  const cols = EntryColumns.from(entries);
  const c = cols.columns;
  const apart = o.apart === true;
  const md5 = apart || entries.every((e) => MD5_ETAG.test(e.etag));
  const etags = apart ? new Uint8Array(0) : md5 ? new Uint8Array(16 * entries.length) : c.etags;
  if (md5 && !apart)
    entries.forEach((e, i) => {
      for (let j = 0; j < 16; j++) etags[16 * i + j] = Number.parseInt(e.etag.slice(1 + 2 * j, 3 + 2 * j), 16);
    });
  const header: PageHeaderV2 = {
    root,
    count: cols.length,
    keyframes: c.keyframes.length,
    keyBytes: c.keys.length,
    etagForm: apart ? "apart" : md5 ? "md5" : "text",
    etagBytes: etags.length,
    errors: [...cols.errors],
  };
  const sections: Record<Section, Uint8Array> = {
    size: bytesOf(c.size),
    keyLength: bytesOf(lengthsOf(c.keyEnd)),
    etagLength: bytesOf(md5 ? new Uint32Array(0) : lengthsOf(c.etagEnd)),
    keyframeCount: bytesOf(lengthsOf(c.keyframeEnd)),
    frames: bytesOf(c.frames),
    width: bytesOf(c.width),
    height: bytesOf(c.height),
    keyframes: bytesOf(c.keyframes),
    kind: c.kind,
    codec: c.codec,
    has: c.has,
    keys: c.keys,
    etags,
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  let size = pad8(PREAMBLE + json.byteLength);
  for (const [name] of SECTIONS) size += sections[name].byteLength;
  const out = new Uint8Array(size);
  out.set(MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint32(4, PAGE_FORMAT_VERSION, true);
  view.setUint32(8, json.byteLength, true);
  out.set(json, PREAMBLE);
  let at = pad8(PREAMBLE + json.byteLength);
  for (const [name] of SECTIONS) {
    out.set(sections[name], at);
    at += sections[name].byteLength;
  }
  return out;
}

/**
 * A page's bytes (as the head's digest covers them) to its root and entry columns: versions 2 and 3
 * as views on the bytes (offsets summed from the lengths), checked column by column; version 1
 * through `decodePage` (the same entries, or the same ZodError, as before).
 *
 * @example
 * const { root, entries } = decodePageBytes(bytes);
 */
export function decodePageBytes(bytes: Uint8Array): { root: string; entries: EntryColumns } {
  if (bytes[0] === 0x7b) {
    const page = decodePage(new TextDecoder().decode(bytes));
    return { root: page.root, entries: EntryColumns.from(page.entries) };
  }
  if (bytes.byteLength < PREAMBLE || MAGIC.some((b, i) => bytes[i] !== b))
    throw new TablePageFormatError("Expected a table page (JSON or ECTC columns) but received other bytes");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(4, true);
  if (version !== 2 && version !== PAGE_FORMAT_VERSION)
    throw new TablePageFormatError(
      `Expected table page format 1 to ${PAGE_FORMAT_VERSION} but received format ${version} (written by a newer edge: update ec)`,
    );
  if (!littleEndian)
    throw new TablePageFormatError("Expected a little-endian machine to read table pages but this one is not");
  const jsonLength = view.getUint32(8, true);
  let header: PageHeaderV2;
  try {
    header = PageHeaderV2.parse(JSON.parse(new TextDecoder().decode(bytes.subarray(PREAMBLE, PREAMBLE + jsonLength))));
  } catch (cause) {
    throw new TablePageFormatError("Expected a table page header but received something else", { cause });
  }
  const md5 = header.etagForm === "md5";
  const apart = header.etagForm === "apart";
  if (apart && version === 2)
    throw new TablePageFormatError("Expected etags inside a table page of format 2 but it says they are apart");
  const want = lengths(header);
  if (md5 || apart) want.etagLength = 0;
  if (md5 && header.etagBytes !== 16 * header.count)
    throw new TablePageFormatError(`Expected ${16 * header.count} bytes of MD5 etags but received ${header.etagBytes}`);
  if (apart && header.etagBytes !== 0)
    throw new TablePageFormatError(
      `Expected no etag bytes in a page whose pins are apart but received ${header.etagBytes}`,
    );
  let size = pad8(PREAMBLE + jsonLength);
  for (const [name, width] of SECTIONS) size += want[name] * width;
  if (size !== bytes.byteLength)
    throw new TablePageFormatError(
      `Expected ${size} bytes for a page of ${header.count} entries but received ${bytes.byteLength}`,
    );
  // Views need aligned offsets: bytes that do not start at one are copied once.
  const own = bytes.byteOffset % 8 === 0 ? bytes : bytes.slice();
  let at = own.byteOffset + pad8(PREAMBLE + jsonLength);
  const got = {} as Record<Section, Float64Array | Uint32Array | Uint8Array>;
  for (const [name, width] of SECTIONS) {
    const Kind = width === 8 ? Float64Array : width === 4 ? Uint32Array : Uint8Array;
    got[name] = new Kind(own.buffer as ArrayBuffer, at, want[name]);
    at += want[name] * width;
  }
  const u32 = (name: Section) => got[name] as Uint32Array;
  const keyEnd = endsOf(u32("keyLength"), header.keyBytes);
  // Packed MD5s stay packed: an etag is made as text only when asked for.
  const etagEnd = md5 || apart ? new Uint32Array(0) : endsOf(u32("etagLength"), header.etagBytes);
  const keyframeEnd = endsOf(u32("keyframeCount"), header.keyframes);
  if (!keyEnd || !etagEnd || !keyframeEnd)
    throw new TablePageFormatError(
      "Expected key, etag and keyframe lengths that add up to the page's blocks but they do not",
    );
  const columns: Columns = {
    size: got.size as Float64Array,
    keyEnd,
    etagEnd,
    keyframeEnd,
    frames: u32("frames"),
    width: u32("width"),
    height: u32("height"),
    keyframes: u32("keyframes"),
    kind: got.kind as Uint8Array,
    codec: got.codec as Uint8Array,
    has: got.has as Uint8Array,
    keys: got.keys as Uint8Array,
    etags: got.etags as Uint8Array,
    ...(md5 ? { md5: true } : {}),
    ...(apart ? { apart: true } : {}),
  };
  const entries = new EntryColumns(columns, new Map(header.errors));
  check(entries, header);
  return { root: header.root, entries };
}

/**
 * A version 2 or 3 page's sections as stored, by name (the JSON header first): what a benchmark
 * weighs section by section (bench/page-sections.ts).
 *
 * @example
 * for (const [name, bytes] of pageSections(encodePageBytes(root, entries))) console.log(name, bytes.length);
 */
export function pageSections(bytes: Uint8Array): [string, Uint8Array][] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const jsonLength = view.getUint32(8, true);
  const header = PageHeaderV2.parse(
    JSON.parse(new TextDecoder().decode(bytes.subarray(PREAMBLE, PREAMBLE + jsonLength))),
  );
  const want = lengths(header);
  if (header.etagForm !== "text") want.etagLength = 0;
  const out: [string, Uint8Array][] = [["header", bytes.subarray(0, pad8(PREAMBLE + jsonLength))]];
  let at = pad8(PREAMBLE + jsonLength);
  for (const [name, width] of SECTIONS) {
    out.push([name, bytes.subarray(at, at + want[name] * width)]);
    at += want[name] * width;
  }
  return out;
}

/** What TableEntryV1 would refuse, refused: offsets out of order or past their block, unknown kinds, codecs or bits, sizes not safe integers. */
function check(e: EntryColumns, h: PageHeaderV2): void {
  const c = e.columns;
  const fail = (i: number, what: string) => {
    throw new TablePageFormatError(`Expected a valid entry ${i} of the table page but its ${what} is not`);
  };
  for (let i = 0; i < h.count; i++) {
    const has = c.has[i]!;
    if (has & ~HAS_ALL) fail(i, "field set");
    if (!(has & HAS.keyframes) && c.keyframeEnd[i] !== (i === 0 ? 0 : c.keyframeEnd[i - 1])) fail(i, "keyframe list");
    if (c.kind[i]! >= KINDS.length) fail(i, "kind");
    if (has & HAS.codec && c.codec[i]! >= CODECS.length) fail(i, "codec");
    if ((has & HAS.width && c.width[i] === 0) || (has & HAS.height && c.height[i] === 0)) fail(i, "size in pixels");
    const size = c.size[i]!;
    if (!Number.isSafeInteger(size) || size < 0) fail(i, "size");
  }
  for (const [i] of h.errors) if (i >= h.count) fail(i, "error record");
}
