/**
 * Table pages as stored (before gzip; the head's SHA-256 covers these bytes). Version 4, the
 * one written where the table's shard target is known (the edge's publisher, `ec index`, the
 * benches' tables): "ECTC", u32 version, u32 length of a JSON header (root, counts, error
 * records, and the shard target its shards were cut at), padding to 8 bytes, then the columns of
 * `entry-columns.ts` in SECTIONS order, little-endian, with four per-shard sections: each shard's
 * entries, key bytes, keyframes and etag bytes (text etags only), the shards cut by the page-local
 * rule (page-shards.ts). A reader then finds a page's shards without hashing its keys, and fills
 * and checks the entries of a shard only when one is read (page-blocks.ts). Version 3 (written
 * where no shard target is known: a local table) is the same without the shard sections, checked
 * whole; in versions 3 and 4 a page's etags may be stored apart (`etagForm: "apart"`,
 * page-pins.ts): the etag sections are then empty. Decoding makes typed-array views on the
 * bytes, no object per entry. Version 2 (version 3 with etags always inside) and version 1 (a
 * JSON TablePageV1) are still read; any other is refused with ERR_TABLE_PAGE_FORMAT.
 */
import { z } from "zod";
import { IndexErrorV1, type TableEntryV1 } from "../schema/index.js";
import { type Columns, EntryColumns, fitsColumns } from "./entry-columns.js";
import { checkEntry, offsetsOf, ShardBlocks } from "./page-blocks.js";
import { decodePage } from "./page-decode.js";
import { TablePageFormatError } from "./page-errors.js";
import { keyHashUtf8, pageShards } from "../page-shards.js";

export { TablePageFormatError };
/** The newest page format, written where the shard target is known (PAGE_FORMAT_UNSHARDED where not). */
export const PAGE_FORMAT_VERSION = 4;
/** The format written without a shard target: no shard sections, checked whole. */
export const PAGE_FORMAT_UNSHARDED = 3;
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
  /** Format 4: the shard target the page's shards were cut at, and how many there are. */
  shardBytes: z.number().int().positive().optional(),
  shards: z.number().int().nonnegative().optional(),
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
  ["shardLength", 4],
  ["shardKeyBytes", 4],
  ["shardKeyframes", 4],
  ["shardEtagBytes", 4],
  ["kind", 1],
  ["codec", 1],
  ["has", 1],
  ["keys", 1],
  ["etags", 1],
] as const;
type Section = (typeof SECTIONS)[number][0];

const pad8 = (n: number) => (n + 7) & ~7;
const utf8 = new TextDecoder();
const ETAG_FORMS = new Set<unknown>(PageHeaderV2.shape.etagForm.options);
const count = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/**
 * A page's header as PageHeaderV2.parse returns it (the same value, or the same ZodError), checked
 * here in the common case (no error records, counts that are safe integers): zod's parse of it
 * cost more than the rest of a format-4 page's decoding before the page's first clip.
 */
function parseHeader(raw: unknown): PageHeaderV2 {
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw)) {
    const h = raw as Record<string, unknown>;
    const { root, keyframes, keyBytes, etagForm, etagBytes, errors, shardBytes, shards } = h;
    if (
      typeof root === "string" &&
      count(h.count) &&
      count(keyframes) &&
      count(keyBytes) &&
      ETAG_FORMS.has(etagForm) &&
      count(etagBytes) &&
      Array.isArray(errors) &&
      errors.length === 0 &&
      (shardBytes === undefined || (count(shardBytes) && shardBytes > 0)) &&
      (shards === undefined || count(shards))
    )
      return {
        root,
        count: h.count,
        keyframes,
        keyBytes,
        etagForm: etagForm as PageHeaderV2["etagForm"],
        etagBytes,
        errors: [],
        ...(shardBytes !== undefined ? { shardBytes } : {}),
        ...(shards !== undefined ? { shards } : {}),
      };
  }
  return PageHeaderV2.parse(raw);
}

/** Elements of each section for a page of this header (no shard sections before format 4). */
function lengths(h: PageHeaderV2): Record<Section, number> {
  const n = h.count;
  const perEntry = { size: n, keyLength: n, etagLength: n, keyframeCount: n, frames: n, width: n, height: n };
  const s = h.shards ?? 0;
  const text = h.etagForm === "text";
  const perShard = { shardLength: s, shardKeyBytes: s, shardKeyframes: s, shardEtagBytes: text ? s : 0 };
  return {
    ...perEntry,
    ...perShard,
    keyframes: h.keyframes,
    kind: n,
    codec: n,
    has: n,
    keys: h.keyBytes,
    etags: h.etagBytes,
  };
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
 * A page's bytes: version 4 columns with `shardBytes` (the table's shard target: its shards cut
 * by the page-local rule and stored), version 3 without, or version 1 JSON where a number does
 * not fit a column (never so for real media: frames, dimensions and keyframes past 2^32).
 * `apart`: the etags are left out (the caller stores them as the page's pins, page-pins.ts); a
 * JSON page always holds them.
 *
 * @example
 * const bytes = encodePageBytes("gameplay", entries, { apart: true, shardBytes: 128 << 20 });
 */
export function encodePageBytes(
  root: string,
  entries: readonly TableEntryV1[],
  o: { readonly apart?: boolean; readonly shardBytes?: number | undefined } = {},
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
  const etagForm = apart ? "apart" : md5 ? "md5" : "text";
  const sharded = o.shardBytes !== undefined;
  const shards = sharded ? shardSections(c, etagForm === "text", o.shardBytes!) : undefined;
  const header: PageHeaderV2 = {
    root,
    count: cols.length,
    keyframes: c.keyframes.length,
    keyBytes: c.keys.length,
    etagForm,
    etagBytes: etags.length,
    errors: [...cols.errors],
    ...(shards ? { shardBytes: o.shardBytes!, shards: shards.length.length } : {}),
  };
  const none = new Uint32Array(0);
  const sections: Record<Section, Uint8Array> = {
    size: bytesOf(c.size),
    keyLength: bytesOf(lengthsOf(c.keyEnd)),
    etagLength: bytesOf(md5 ? new Uint32Array(0) : lengthsOf(c.etagEnd)),
    keyframeCount: bytesOf(lengthsOf(c.keyframeEnd)),
    frames: bytesOf(c.frames),
    width: bytesOf(c.width),
    height: bytesOf(c.height),
    keyframes: bytesOf(c.keyframes),
    shardLength: bytesOf(shards?.length ?? none),
    shardKeyBytes: bytesOf(shards?.keyBytes ?? none),
    shardKeyframes: bytesOf(shards?.keyframes ?? none),
    shardEtagBytes: bytesOf(shards?.etagBytes ?? none),
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
  view.setUint32(4, sharded ? PAGE_FORMAT_VERSION : PAGE_FORMAT_UNSHARDED, true);
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
 * The page-local rule's shards of these columns at `shardBytes`, as the per-shard sections
 * store them: each shard's entries, key bytes, keyframes and (`text` etags) etag bytes.
 */
function shardSections(c: Columns, text: boolean, shardBytes: number) {
  const cuts = pageShards(
    {
      length: c.size.length,
      key: () => "",
      size: (i) => c.size[i]!,
      hash: (i) => keyHashUtf8(c.keys, i === 0 ? 0 : c.keyEnd[i - 1]!, c.keyEnd[i]!),
    },
    shardBytes,
  );
  const n = cuts.length;
  const out = {
    length: new Uint32Array(n),
    keyBytes: new Uint32Array(n),
    keyframes: new Uint32Array(n),
    etagBytes: new Uint32Array(text ? n : 0),
  };
  const end = (ends: Uint32Array, i: number) => (i === 0 ? 0 : ends[i - 1]!);
  cuts.forEach(({ first, count }, s) => {
    const last = first + count;
    out.length[s] = count;
    out.keyBytes[s] = end(c.keyEnd, last) - end(c.keyEnd, first);
    out.keyframes[s] = end(c.keyframeEnd, last) - end(c.keyframeEnd, first);
    if (text) out.etagBytes[s] = end(c.etagEnd, last) - end(c.etagEnd, first);
  });
  return out;
}

/**
 * A page's bytes (as the head's digest covers them) to its root and entry columns: versions 2 to
 * 4 as views on the bytes (offsets summed from the lengths); versions 2 and 3 checked column by
 * column, version 4 a shard at a time as its entries are read (page-blocks.ts: its shards as
 * stored, `entries.shardStarts`); version 1 through `decodePage` (the same entries, or the same
 * ZodError, as before).
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
  if (version !== 2 && version !== 3 && version !== PAGE_FORMAT_VERSION)
    throw new TablePageFormatError(
      `Expected table page format 1 to ${PAGE_FORMAT_VERSION} but received format ${version} (written by a newer edge: update ec)`,
    );
  if (!littleEndian)
    throw new TablePageFormatError("Expected a little-endian machine to read table pages but this one is not");
  const jsonLength = view.getUint32(8, true);
  let header: PageHeaderV2;
  try {
    header = parseHeader(JSON.parse(utf8.decode(bytes.subarray(PREAMBLE, PREAMBLE + jsonLength))));
  } catch (cause) {
    throw new TablePageFormatError("Expected a table page header but received something else", { cause });
  }
  const md5 = header.etagForm === "md5";
  const apart = header.etagForm === "apart";
  if (apart && version === 2)
    throw new TablePageFormatError("Expected etags inside a table page of format 2 but it says they are apart");
  const sharded = version === PAGE_FORMAT_VERSION;
  if (sharded !== (header.shardBytes !== undefined) || sharded !== (header.shards !== undefined))
    throw new TablePageFormatError(
      `Expected a shard target and shard count in the header of a table page of format ${version} ${sharded ? "but it has none" : "only from format 4 on but it has them"}`,
    );
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
  if (sharded) return { root: header.root, entries: shardedEntries(header, got, md5, apart) };
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
 * A version 4 page's entries: views on its columns, their end offsets filled (and their entries
 * checked) a shard at a time as they are read. What is checked now is what the shard sections
 * make of the page: shards of at least one entry adding up to its count, key bytes, keyframes
 * and etag bytes adding up to its blocks, error records within it.
 */
function shardedEntries(
  h: PageHeaderV2,
  got: Record<Section, Float64Array | Uint32Array | Uint8Array>,
  md5: boolean,
  apart: boolean,
): EntryColumns {
  const u32 = (name: Section) => got[name] as Uint32Array;
  const text = !md5 && !apart;
  const length = u32("shardLength");
  for (let s = 0; s < length.length; s++)
    if (length[s] === 0)
      throw new TablePageFormatError(`Expected shard ${s} of the table page to hold an entry but it holds none`);
  if ((h.count === 0) !== (length.length === 0))
    throw new TablePageFormatError(
      `Expected shards in a table page of ${h.count} entries but received ${length.length}`,
    );
  const starts = offsetsOf(length, h.count);
  const keyAt = offsetsOf(u32("shardKeyBytes"), h.keyBytes);
  const keyframeAt = offsetsOf(u32("shardKeyframes"), h.keyframes);
  const etagAt = text ? offsetsOf(u32("shardEtagBytes"), h.etagBytes) : undefined;
  if (!starts || !keyAt || !keyframeAt || (text && !etagAt))
    throw new TablePageFormatError(
      "Expected shard entries, key, etag and keyframe counts that add up to the page's but they do not",
    );
  for (const [i] of h.errors)
    if (i >= h.count)
      throw new TablePageFormatError(`Expected a valid entry ${i} of the table page but its error record is not`);
  const columns: Columns = {
    size: got.size as Float64Array,
    keyEnd: new Uint32Array(h.count),
    etagEnd: new Uint32Array(text ? h.count : 0),
    keyframeEnd: new Uint32Array(h.count),
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
  const stored = { keyLength: u32("keyLength"), keyframeCount: u32("keyframeCount"), etagLength: u32("etagLength") };
  const blocks = new ShardBlocks(columns, stored, { starts, keyAt, keyframeAt, etagAt }, h.shardBytes!);
  return new EntryColumns(columns, new Map(h.errors), undefined, blocks);
}

/**
 * A version 2 to 4 page's sections as stored, by name (the JSON header first): what a benchmark
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
  // Sections a format-3 page has none of (the shard sections) are left out.
  let at = pad8(PREAMBLE + jsonLength);
  for (const [name, width] of SECTIONS) {
    if (header.shards === undefined && name.startsWith("shard")) continue;
    out.push([name, bytes.subarray(at, at + want[name] * width)]);
    at += want[name] * width;
  }
  return out;
}

/** What TableEntryV1 would refuse, refused: offsets out of order or past their block, unknown kinds, codecs or bits, sizes not safe integers. */
function check(e: EntryColumns, h: PageHeaderV2): void {
  const c = e.columns;
  for (let i = 0; i < h.count; i++) checkEntry(c, i, i === 0 ? 0 : c.keyframeEnd[i - 1]!);
  for (const [i] of h.errors)
    if (i >= h.count)
      throw new TablePageFormatError(`Expected a valid entry ${i} of the table page but its error record is not`);
}
