/**
 * A table's entries as columns: keys and etags as UTF-8 blocks with end offsets, numbers as
 * typed arrays, every keyframe list packed into one array, error records aside. What a client
 * plans from without one JS object per entry; `entry(i)` gives the TableEntryV1 back, exactly.
 */
import { EcError } from "../errors.js";
import { compareKeys } from "./entry.js";
import { MediaKind, VideoCodec, type IndexErrorV1, type TableEntryV1 } from "../schema/index.js";

export const KINDS: readonly TableEntryV1["kind"][] = MediaKind.options;
export const CODECS: readonly NonNullable<TableEntryV1["codec"]>[] = VideoCodec.options;

/** Which optional fields an entry has, one bit each. */
export const HAS = { frames: 1, keyframes: 2, codec: 4, width: 8, height: 16 } as const;
export const HAS_ALL = 31;

/** The arrays of a page or table, in the order a page stores them (8-byte values first, so each stays aligned). */
export interface Columns {
  readonly size: Float64Array;
  readonly keyEnd: Uint32Array;
  readonly etagEnd: Uint32Array;
  readonly keyframeEnd: Uint32Array;
  /** u32 in a page; f64 for entries read from JSON whose numbers do not fit (`fitsColumns`). */
  readonly frames: Uint32Array | Float64Array;
  readonly width: Uint32Array | Float64Array;
  readonly height: Uint32Array | Float64Array;
  readonly keyframes: Uint32Array | Float64Array;
  readonly kind: Uint8Array;
  readonly codec: Uint8Array;
  readonly has: Uint8Array;
  readonly keys: Uint8Array;
  /** UTF-8 with `etagEnd`, or (`md5`) each a quoted MD5 packed as its 16 bytes, `etagEnd` empty. */
  readonly etags: Uint8Array;
  readonly md5?: boolean;
  /** The etags are stored apart (the pages' pins, page-pins.ts): `etags` and `etagEnd` empty, `etag(i)` asks the pins. */
  readonly apart?: boolean;
}

/**
 * The etags of columns stored apart: `etag(i)` once `ready(i)` has resolved (it fetches and
 * checks the pins of entry i's page); before, `etag(i)` throws ERR_TABLE_PINS_NOT_READY.
 */
export interface PinLookup {
  etag(i: number): string;
  ready(i: number): Promise<void>;
}

/** An etag asked for before its page's pins were fetched: a bug of the caller, which awaits `pinsReady` first. */
export class PinsNotReadyError extends EcError {
  constructor(i: number) {
    super("ERR_TABLE_PINS_NOT_READY", `Expected the pins of entry ${i}'s page to be fetched but they were not`);
    this.name = "PinsNotReadyError";
  }
}

/** The column names, in storage order. */
export const COLUMN_NAMES = [
  "size",
  "keyEnd",
  "etagEnd",
  "keyframeEnd",
  "frames",
  "width",
  "height",
  "keyframes",
  "kind",
  "codec",
  "has",
  "keys",
  "etags",
] as const satisfies readonly (keyof Columns)[];
type ColumnName = (typeof COLUMN_NAMES)[number];

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const U32_MAX = 0xffffffff;

/**
 * Whether every number of `entries` fits the columns (u32 frames, dimensions and keyframes):
 * always so for real media; a page that does not is stored as JSON instead.
 */
export function fitsColumns(entries: readonly TableEntryV1[]): boolean {
  const fits = (x: number | undefined) => x === undefined || x <= U32_MAX;
  for (const e of entries) {
    if (!fits(e.frames) || !fits(e.width) || !fits(e.height)) return false;
    if (e.keyframes) for (const k of e.keyframes) if (k > U32_MAX) return false;
  }
  return true;
}

/**
 * Columns decoded a shard at a time (page format 4, page-blocks.ts): their end offsets are
 * filled, and their entries checked, for the shard of an entry when it is first read.
 */
export interface LazyEnds {
  /** 1 for each entry whose offsets are filled and checked. */
  readonly ready: Uint8Array;
  /** Fills and checks the shard of entry i (and entry i − 1's end); throws where it does not check. */
  need(i: number): void;
  /** Fills and checks every shard. */
  all(): void;
  /** Entries filled and checked so far. */
  readonly decoded: number;
  /** The page's shards as its writer cut them: their first entries, at this shard target (page-shards.ts). */
  readonly shardBytes: number;
  readonly shardStarts: Uint32Array;
}

export class EntryColumns {
  readonly length: number;
  readonly #columns: Columns;
  readonly #lazy: LazyEnds | undefined;
  readonly #ready: Uint8Array | undefined;

  /**
   * `errors`: the error record of each entry that has one, by index; `pins`: where etags stored
   * apart come from; `lazy`: where the columns' end offsets are filled a shard at a time.
   */
  constructor(
    columns: Columns,
    readonly errors: ReadonlyMap<number, IndexErrorV1> = new Map(),
    private readonly pins?: PinLookup,
    lazy?: LazyEnds,
  ) {
    this.#columns = columns;
    this.#lazy = lazy;
    this.#ready = lazy?.ready;
    this.length = columns.size.length;
  }

  /** The columns, every entry's offsets filled (and checked) first where they are read a shard at a time. */
  get columns(): Columns {
    this.#lazy?.all();
    return this.#columns;
  }

  /** Entries decoded (their offsets filled and checked): every one, but for a page read a shard at a time. */
  get decoded(): number {
    return this.#lazy ? this.#lazy.decoded : this.length;
  }

  /**
   * The first entry of each shard, where the columns' page stored its shards cut at
   * `shardBytes` by the page-local rule (page format 4); undefined where it did not (or at
   * another target): the caller cuts them.
   */
  shardStarts(shardBytes: number): Uint32Array | undefined {
    return this.#lazy?.shardBytes === shardBytes ? this.#lazy.shardStarts : undefined;
  }

  /**
   * Each entry's kind and field bits as stored, unchecked: for a scan that reads the values it
   * picks through `kind(i)` and the other accessors (which check their shard first).
   */
  get flags(): { readonly kind: Uint8Array; readonly has: Uint8Array } {
    return this.#columns;
  }

  /** Whether the etags are stored apart (the page's pins). */
  get apart(): boolean {
    return this.#columns.apart === true;
  }

  /** Entry i's offsets filled and checked (a shard at a time, where the columns are read so). */
  private need(i: number): Columns {
    if (this.#ready !== undefined && this.#ready[i] === 0 && i >= 0 && i < this.length) this.#lazy!.need(i);
    return this.#columns;
  }

  /** The same columns with their etags from `pins`. */
  withPins(pins: PinLookup): EntryColumns {
    return new EntryColumns(this.#columns, this.errors, pins, this.#lazy);
  }

  /** Resolves once `etag(i)` can answer (at once where the etags are in the columns). */
  pinsReady(i: number): Promise<void> {
    return this.apart && this.pins ? this.pins.ready(i) : Promise.resolve();
  }

  /** The columns of `entries` (frames, dimensions and keyframes as u32 where they fit, else f64). */
  static from(entries: readonly TableEntryV1[]): EntryColumns {
    const n = entries.length;
    const Wide = fitsColumns(entries) ? Uint32Array : Float64Array;
    const keyParts = entries.map((e) => encoder.encode(e.key));
    const etagParts = entries.map((e) => encoder.encode(e.etag));
    let keyframeCount = 0;
    for (const e of entries) keyframeCount += e.keyframes?.length ?? 0;
    const c: Columns = {
      size: new Float64Array(n),
      keyEnd: new Uint32Array(n),
      etagEnd: new Uint32Array(n),
      keyframeEnd: new Uint32Array(n),
      frames: new Wide(n),
      width: new Wide(n),
      height: new Wide(n),
      keyframes: new Wide(keyframeCount),
      kind: new Uint8Array(n),
      codec: new Uint8Array(n),
      has: new Uint8Array(n),
      keys: concatBytes(keyParts),
      etags: concatBytes(etagParts),
    };
    const errors = new Map<number, IndexErrorV1>();
    let keyEnd = 0;
    let etagEnd = 0;
    let k = 0;
    entries.forEach((e, i) => {
      c.size[i] = e.size;
      c.keyEnd[i] = keyEnd += keyParts[i]!.byteLength;
      c.etagEnd[i] = etagEnd += etagParts[i]!.byteLength;
      c.kind[i] = KINDS.indexOf(e.kind);
      let has = 0;
      if (e.frames !== undefined) (has |= HAS.frames), (c.frames[i] = e.frames);
      if (e.keyframes) {
        has |= HAS.keyframes;
        c.keyframes.set(e.keyframes, k);
        k += e.keyframes.length;
      }
      c.keyframeEnd[i] = k;
      if (e.codec !== undefined) (has |= HAS.codec), (c.codec[i] = CODECS.indexOf(e.codec));
      if (e.width !== undefined) (has |= HAS.width), (c.width[i] = e.width);
      if (e.height !== undefined) (has |= HAS.height), (c.height[i] = e.height);
      c.has[i] = has;
      if (e.error !== undefined) errors.set(i, e.error);
    });
    return new EntryColumns(c, errors);
  }

  /** The entries of every part, one after another (each part's offsets moved past the previous parts'). */
  static concat(parts: readonly EntryColumns[]): EntryColumns {
    if (parts.length <= 1) return parts[0] ?? EntryColumns.from([]);
    // Etags apart in any part: apart in the whole (the caller's pins answer for every part).
    const apart = parts.some((p) => p.columns.apart);
    // Packed MD5 etags stay packed when every part has them; else each part's are text.
    const md5 = !apart && parts.every((p) => p.columns.md5);
    const cols = parts.map((p) =>
      apart
        ? { ...p.columns, etags: new Uint8Array(0), etagEnd: new Uint32Array(0) }
        : md5 || !p.columns.md5
          ? p.columns
          : textEtags(p.columns),
    );
    const total = (name: ColumnName) => cols.reduce((s, c) => s + c[name].length, 0);
    const out: Record<string, ArrayLike<number>> = {};
    for (const name of COLUMN_NAMES) {
      if (name === "keyEnd" || name === "etagEnd" || name === "keyframeEnd") continue;
      // A part read from JSON may hold f64 where the others hold u32: the wider one holds both.
      const wide = cols.some((c) => c[name] instanceof Float64Array);
      const to = wide
        ? new Float64Array(total(name))
        : new (cols[0]![name].constructor as Uint32ArrayConstructor)(total(name));
      let at = 0;
      for (const c of cols) to.set(c[name] as Uint32Array, at), (at += c[name].length);
      out[name] = to;
    }
    out.keyEnd = ends(cols, "keyEnd", "keys");
    out.etagEnd = md5 || apart ? new Uint32Array(0) : ends(cols, "etagEnd", "etags");
    out.keyframeEnd = ends(cols, "keyframeEnd", "keyframes");
    const errors = new Map<number, IndexErrorV1>();
    let base = 0;
    parts.forEach((p) => {
      for (const [i, e] of p.errors) errors.set(base + i, e);
      base += p.length;
    });
    const flags = { ...(md5 ? { md5: true } : {}), ...(apart ? { apart: true } : {}) };
    return new EntryColumns({ ...(out as unknown as Columns), ...flags }, errors);
  }

  /** Entries [from, to) as columns of their own (etags stored apart stay apart: the caller's pins answer). */
  slice(from: number, to: number): EntryColumns {
    const at = (i: number) => (this.apart ? this.entry(from + i, "") : this.entry(from + i));
    const out = EntryColumns.from(Array.from({ length: Math.max(0, to - from) }, (_, i) => at(i)));
    if (!this.apart) return out;
    return new EntryColumns(
      { ...out.columns, etags: new Uint8Array(0), etagEnd: new Uint32Array(0), apart: true },
      out.errors,
    );
  }

  private keyStart(i: number): number {
    return i === 0 ? 0 : this.#columns.keyEnd[i - 1]!;
  }

  key(i: number): string {
    const c = this.need(i);
    return decoder.decode(c.keys.subarray(this.keyStart(i), c.keyEnd[i]));
  }

  /** The entry of `key` (the columns in key order, as a table lists them), found by bisection; undefined where none. */
  indexOf(key: string): number | undefined {
    let lo = 0;
    let hi = this.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareKeys(this.key(mid), key);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** Resolves once the etag of `key`'s entry can be read (its page's pins fetched where they are apart). */
  async keyPinned(key: string): Promise<void> {
    if (!this.apart) return;
    const i = this.indexOf(key);
    if (i !== undefined) await this.pinsReady(i);
  }

  /**
   * The entry of `object`: the one it was made from where these columns made it (`at`), with no
   * search (a read asks this of every object it reads); else found by key.
   */
  entryOf(object: { readonly key: string }): number | undefined {
    return ListedObject.entryIn(this, object) ?? this.indexOf(object.key);
  }

  /** Resolves once `object`'s etag can be read (its page's pins fetched where they are apart). */
  async objectPinned(object: { readonly key: string }): Promise<void> {
    if (!this.apart) return;
    const i = this.entryOf(object);
    if (i !== undefined) await this.pinsReady(i);
  }

  /** Whether entry i's key starts with `prefix` (compared as UTF-8 bytes, no string made). */
  keyStartsWith(i: number, prefix: Uint8Array): boolean {
    const c = this.need(i);
    const start = this.keyStart(i);
    if (c.keyEnd[i]! - start < prefix.length) return false;
    const keys = c.keys;
    for (let j = 0; j < prefix.length; j++) if (keys[start + j] !== prefix[j]) return false;
    return true;
  }

  etag(i: number): string {
    const c = this.need(i);
    if (c.apart) {
      if (!this.pins) throw new PinsNotReadyError(i);
      return this.pins.etag(i);
    }
    if (c.md5) {
      let hex = '"';
      for (let j = 16 * i; j < 16 * i + 16; j++) hex += HEX[c.etags[j]!];
      return `${hex}"`;
    }
    return decoder.decode(c.etags.subarray(i === 0 ? 0 : c.etagEnd[i - 1], c.etagEnd[i]));
  }

  size(i: number): number {
    return this.need(i).size[i]!;
  }

  kind(i: number): TableEntryV1["kind"] {
    return KINDS[this.need(i).kind[i]!]!;
  }

  frames(i: number): number | undefined {
    const c = this.need(i);
    return c.has[i]! & HAS.frames ? c.frames[i] : undefined;
  }

  /** Entry i's keyframes, a view into the packed array (no copy). */
  keyframes(i: number): Uint32Array | Float64Array | undefined {
    const c = this.need(i);
    if (!(c.has[i]! & HAS.keyframes)) return undefined;
    return c.keyframes.subarray(i === 0 ? 0 : c.keyframeEnd[i - 1], c.keyframeEnd[i]);
  }

  /** Whether entries a and b both have frames and keyframes, and the same (compared in place, no view made). */
  sameFrames(a: number, b: number): boolean {
    this.need(a);
    const c = this.need(b);
    const both = HAS.frames | HAS.keyframes;
    if ((c.has[a]! & both) !== both || (c.has[b]! & both) !== both || c.frames[a] !== c.frames[b]) return false;
    const a0 = a === 0 ? 0 : c.keyframeEnd[a - 1]!;
    const b0 = b === 0 ? 0 : c.keyframeEnd[b - 1]!;
    const n = c.keyframeEnd[a]! - a0;
    if (c.keyframeEnd[b]! - b0 !== n) return false;
    for (let i = 0; i < n; i++) if (c.keyframes[a0 + i] !== c.keyframes[b0 + i]) return false;
    return true;
  }

  width(i: number): number | undefined {
    const c = this.need(i);
    return c.has[i]! & HAS.width ? c.width[i] : undefined;
  }

  error(i: number): IndexErrorV1 | undefined {
    return this.errors.get(i);
  }

  /** Entry i as the JSON page held it (`etag` given: that one, so etags stored apart are not asked for). */
  entry(i: number, etag?: string): TableEntryV1 {
    const c = this.need(i);
    const has = c.has[i]!;
    const e: TableEntryV1 = { key: this.key(i), size: c.size[i]!, etag: etag ?? this.etag(i), kind: this.kind(i) };
    if (has & HAS.frames) e.frames = c.frames[i]!;
    if (has & HAS.keyframes) e.keyframes = Array.from(this.keyframes(i)!);
    if (has & HAS.codec) e.codec = CODECS[c.codec[i]!]!;
    if (has & HAS.width) e.width = c.width[i]!;
    if (has & HAS.height) e.height = c.height[i]!;
    const error = this.errors.get(i);
    if (error !== undefined) e.error = error;
    return e;
  }

  /**
   * Entry i as a listing's object (key, size, etag, kind), made when asked for: so the columns
   * are an object list. Its etag is read when first asked for, so an object whose pins are apart
   * is made before they are fetched (a source awaits `objectPinned` before it reads the object).
   */
  at(i: number): ListedObject | undefined {
    if (!(i >= 0 && i < this.length)) return undefined;
    return new ListedObject(this, i);
  }

  /** Every entry as an object: for the publisher's merge, which rewrites a page or two. */
  entries(): TableEntryV1[] {
    return Array.from({ length: this.length }, (_, i) => this.entry(i));
  }
}

/**
 * One entry as a listing's object: its four fields, and (private, so it compares and serializes
 * as those) the columns and entry it was made from, so a source finds its entry without a search.
 */
export class ListedObject {
  readonly key: string;
  readonly size: number;
  readonly etag!: string;
  readonly kind: TableEntryV1["kind"];
  readonly #columns: EntryColumns;
  readonly #index: number;

  constructor(columns: EntryColumns, index: number) {
    this.#columns = columns;
    this.#index = index;
    this.key = columns.key(index);
    this.size = columns.size(index);
    if (!columns.apart) (this as { etag: string }).etag = columns.etag(index);
    else {
      let etag: string | undefined;
      // Read when first asked for: before its page's pins are fetched it throws ERR_TABLE_PINS_NOT_READY.
      Object.defineProperty(this, "etag", { get: () => (etag ??= columns.etag(index)), enumerable: true });
    }
    this.kind = columns.kind(index);
  }

  /** The entry `object` was made from where `columns` made it, else undefined. */
  static entryIn(columns: EntryColumns, object: unknown): number | undefined {
    return object instanceof ListedObject && object.#columns === columns ? object.#index : undefined;
  }
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** End offsets of a column across parts: each part's moved past the previous parts' `block`. */
function ends(cols: readonly Columns[], name: "keyEnd" | "etagEnd" | "keyframeEnd", block: ColumnName): Uint32Array {
  const out = new Uint32Array(cols.reduce((n, c) => n + c[name].length, 0));
  let at = 0;
  let shift = 0;
  for (const c of cols) {
    const from = c[name];
    for (let i = 0; i < from.length; i++) out[at + i] = from[i]! + shift;
    at += from.length;
    shift += c[block].length;
  }
  return out;
}

/** Columns whose packed MD5 etags are written out as text (34 bytes each). */
function textEtags(c: Columns): Columns {
  const n = c.etags.length / 16;
  const etags = new Uint8Array(34 * n);
  const etagEnd = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const o = 34 * i;
    etags[o] = 0x22;
    etags[o + 33] = 0x22;
    for (let j = 0; j < 16; j++) {
      const hex = HEX[c.etags[16 * i + j]!]!;
      etags[o + 1 + 2 * j] = hex.charCodeAt(0);
      etags[o + 2 + 2 * j] = hex.charCodeAt(1);
    }
    etagEnd[i] = o + 34;
  }
  const { md5: _, ...rest } = c;
  return { ...rest, etags, etagEnd };
}

function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.byteLength);
  return out;
}
