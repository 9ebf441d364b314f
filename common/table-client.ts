/**
 * Client side of the dataset table (SDK, CLI, bench): the signed head of a generation, its
 * page list (read from its directory pages, head format 2, lazily with `openTable`), its
 * pages fetched in parallel and checked against the digests the head and directory pages
 * name, the entries under the dataset's prefix in listing order; and signed URLs for objects
 * planned from it.
 */
import { compareKeys } from "./dataset-table/entry.js";
import { gunzip, sha256 } from "./dataset-table/digest.js";
import { EntryColumns } from "./dataset-table/entry-columns.js";
import { decodePageBytes } from "./dataset-table/page-codec.js";
import { MAX_PAGES_PER_REQUEST, splitFrames } from "./dataset-table/page-frames.js";
import { SetDigest } from "./dataset-table/set-digest.js";
import { type PinPart, PINS_KEPT, TablePins } from "./table-pins.js";
import { TablePageList } from "./table-page-list.js";
import { ErrorBody } from "./errors.js";
import { mapLimit } from "./limiter.js";
import {
  assertEdgeUrls,
  datasetBase,
  fetchPublicKeys,
  parseDatasetUrl,
  request,
  type ManifestClientOptions,
} from "./manifest-client.js";
import { ManifestError, ManifestErrorCode, verifiedPayload } from "./manifest-sign.js";
import {
  EnqueuePageV1,
  SignedUrlsV1,
  TABLE_HEAD_VERSION,
  TableHeadV1,
  type PublicKeysV1,
  type TableEntryV1,
  type TablePageRefV1,
} from "./schema/index.js";

/** Pages fetched at once, one a request: a dataset of 10^7 objects has 10^4 pages. */
const PAGE_CONCURRENCY = 64;
/** Requests of several pages at once: enough bytes in flight to fill a fast WAN link's window, bounded whatever the table's size. */
const BATCH_CONCURRENCY = 8;

export { TablePageList };

export interface DatasetTable {
  /** The verified head: format 2 names directory pages, format 1 (older generations) every page. */
  readonly head: TableHeadV1;
  /** The generation's pages whose key range can hold a key under the prefix, in key order (every page for a root's dataset). */
  readonly pages: readonly TablePageRefV1[];
  /** The generation's whole page list, read lazily (what `pages` was read from). */
  readonly list: TablePageList;
  /** Entries under the dataset's prefix, in key (listing) order, as columns (no object per entry). */
  readonly entries: EntryColumns;
  /** HTTP requests made (keys, head, pages). */
  readonly requests: number;
  /** The SetDigest of the entries' (key, etag): from the head's page summaries where a page lies inside the prefix. */
  readonly digest: string;
  /** Where pages keep their etags apart (format 3): the pins, fetched per page as `entries.pinsReady(i)` asks. */
  readonly pins?: TablePins;
}

/** Whether every key of a page's range [first, last] is under `dir`: the head's summary of it is the dataset's. */
export function inside(page: TablePageRefV1, dir: string): boolean {
  return page.first.startsWith(dir) && page.last.startsWith(dir);
}

/** Whether a page's key range [first, last] can hold a key under `dir` ("prefix/"). */
export function overlaps(page: TablePageRefV1, dir: string): boolean {
  return compareKeys(page.last, dir) >= 0 && (compareKeys(page.first, dir) <= 0 || page.first.startsWith(dir));
}

/** A page's base64url SHA-256, as the head records it: WebCrypto's by default, a runtime's own where it is cheaper. */
export type PageDigest = (bytes: Uint8Array) => string | Promise<string>;

/**
 * A page's entries, once its bytes match the SHA-256 its signed head (or directory page) names:
 * ERR_MANIFEST_SIGNATURE where they do not.
 *
 * @example
 * const entries = await checkedPage(ref, await store.page(ref.name), sha256);
 */
export async function checkedPage(ref: TablePageRefV1, bytes: Uint8Array, digest: PageDigest): Promise<EntryColumns> {
  if ((await digest(bytes)) !== ref.sha256)
    throw new ManifestError(
      ManifestErrorCode.SIGNATURE,
      `Table page ${ref.name} does not match the digest its signed head names`,
    );
  return decodePageBytes(bytes).entries;
}

/** Where a table is read from: the edge's routes, or the bucket itself (direct-bucket mode). */
export interface TableStore {
  /** The signed head (parsed JSON), or undefined when there is none (at that generation). */
  head(generation: number | undefined): Promise<unknown | undefined>;
  /** A page's bytes (decompressed). */
  page(name: string): Promise<Uint8Array>;
  /**
   * A page's pins (its etags stored apart, decompressed): asked for ahead of reading an object,
   * never at open. A store without it reads only tables whose pages hold their etags.
   */
  pins?(name: string): Promise<Uint8Array>;
  /** Several pages' pins (decompressed) in one request, as `pages` (undefined where the store cannot). */
  pinsMany?(names: readonly string[]): Promise<Uint8Array[] | undefined>;
  /**
   * Several pages' bytes (decompressed), in the order of `names` (at most
   * MAX_PAGES_PER_REQUEST), or undefined where the store cannot (an edge from before the
   * route): readTable then asks for each with `page`.
   */
  pages?(names: readonly string[]): Promise<Uint8Array[] | undefined>;
}

/**
 * Groups of at most MAX_PAGES_PER_REQUEST pages, as even as they come: 50 pages are one
 * request, 100 are two of 50.
 */
function groups<T>(xs: readonly T[]): T[][] {
  const n = Math.ceil(xs.length / MAX_PAGES_PER_REQUEST);
  const size = Math.ceil(xs.length / Math.max(n, 1));
  return Array.from({ length: n }, (_, g) => xs.slice(g * size, (g + 1) * size));
}

/**
 * The verified head of a generation (latest, or `generation`) from `store`, its Ed25519
 * signature checked against `keys`, with its page list to read lazily; undefined when the
 * store has no table. This is what a client plans from without reading every page: the head
 * is a few KB whatever the table's size, and `list.pagesAt(from, to)` reads only the directory
 * pages that hold pages [from, to) (checked against the SHA-256s the head names, each read
 * once), `list.pageOfEntry(i)` maps an entry index to its page reading at most one directory
 * page, and `list.rangeUnder("prefix/")` the pages a dataset's prefix spans reading at most two.
 * Page and entry counts are `list.pageCount` and `list.entryCount`; the head's directory refs
 * carry each directory page's totals (pages, entries, bytes, digest, frames, keyframes,
 * errors, shards). A format-1 head lists its pages itself and reads nothing more.
 *
 * @example
 * const list = (await openTable(store, keys))!;
 * const refs = await list.pagesAt(0, Math.min(64, list.pageCount)); // names, SHA-256s, summaries
 */
export async function openTable(
  store: TableStore,
  keys: Promise<PublicKeysV1>,
  generation?: number,
  digest: PageDigest = sha256,
): Promise<TablePageList | undefined> {
  const signed = await store.head(generation);
  if (signed === undefined) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(await verifiedPayload(signed, await keys));
  } catch (cause) {
    if (cause instanceof ManifestError) throw cause;
    throw new ManifestError(ManifestErrorCode.INVALID, "The dataset table head is not a TableHeadV1", { cause });
  }
  const version = (payload as { version?: unknown } | null)?.version;
  if (typeof version === "number" && version > TABLE_HEAD_VERSION)
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `Expected a dataset table head of format 1 to ${TABLE_HEAD_VERSION} but received format ${version} (written by a newer edge: update ec)`,
    );
  const head = TableHeadV1.safeParse(payload);
  if (!head.success)
    throw new ManifestError(ManifestErrorCode.INVALID, "The dataset table head is not a TableHeadV1", {
      cause: head.error,
    });
  return new TablePageList(head.data, store, digest);
}

/**
 * Reads and verifies a table from `store`: the head's Ed25519 signature against `keys`, each
 * directory page's and page's SHA-256 against the head (with `digest`); only pages whose key
 * range overlaps `prefix/` are fetched, PAGE_CONCURRENCY at a time. Undefined when the store
 * has no table. Reads every page under the prefix: `openTable` is the lazy way.
 *
 * @example
 * const table = await readTable(store, keys, "gameplay");
 */
export async function readTable(
  store: TableStore,
  keys: Promise<PublicKeysV1>,
  prefix: string,
  generation?: number,
  digest: PageDigest = sha256,
): Promise<DatasetTable | undefined> {
  const list = await openTable(store, keys, generation, digest);
  if (list === undefined) return undefined;
  const head = list.head;
  const dir = `${prefix}/`;
  const range = await list.rangeUnder(dir);
  const wanted = (await list.pagesAt(range.from, range.to)).filter((p) => overlaps(p, dir));
  const pages: EntryColumns[] = new Array(wanted.length);
  /** Where each page's run starts in the page (a page across the prefix's edge is cut). */
  const from = new Array<number>(wanted.length).fill(0);
  const under = new TextEncoder().encode(dir);
  const take = async (i: number, bytes: Uint8Array) => {
    const ref = wanted[i]!;
    const entries = await checkedPage(ref, bytes, digest);
    if (inside(ref, dir)) pages[i] = entries;
    else [from[i], pages[i]] = within(entries, under);
  };
  let requests = 1 + list.requests;
  const one = async (i: number) => {
    requests++;
    await take(i, await store.page(wanted[i]!.name));
  };
  const all = wanted.map((_, i) => i);
  if (!store.pages) await mapLimit(all, PAGE_CONCURRENCY, one);
  else {
    // ⌈pages / 64⌉ requests for the same bytes; a store that cannot (an older edge) is asked page by page.
    const left: number[] = [];
    await mapLimit(groups(all), BATCH_CONCURRENCY, async (batch) => {
      const ask = batch.length > 1 && left.length === 0;
      const many = ask ? await store.pages!(batch.map((i) => wanted[i]!.name)) : undefined;
      if (ask) requests++;
      if (many !== undefined) {
        await Promise.all(batch.map((i, k) => take(i, many[k]!)));
      } else left.push(...batch);
    });
    await mapLimit(left, PAGE_CONCURRENCY, one);
  }
  let entries = EntryColumns.concat(pages);
  let pins: TablePins | undefined;
  const summed = (i: number) => wanted[i]!.digest !== undefined && inside(wanted[i]!, dir);
  if (entries.apart) {
    let start = 0;
    const parts: PinPart[] = wanted.map((ref, i) => {
      const count = pages[i]!.length;
      const part = { ref, start, count, from: from[i]!, inline: pages[i]!.apart ? undefined : pages[i] };
      start += count;
      return part;
    });
    pins = new TablePins(parts, (ref) => pinsOf(store, ref.name), digest, store.pinsMany?.bind(store));
    entries = entries.withPins(pins);
    // A page the head's summary does not cover (cut at the prefix's edge: two at most) is digested entry by entry.
    await Promise.all(wanted.map((_, i) => (summed(i) ? undefined : pins!.readyPart(i))));
    requests += pins.fetched;
  }
  const listed = new SetDigest();
  let at = 0;
  wanted.forEach((ref, i) => {
    const n = pages[i]!.length;
    if (summed(i)) listed.addDigest(ref.digest!, ref.count);
    else for (let j = 0; j < n; j++) listed.add(entries.key(at + j), entries.etag(at + j));
    at += n;
  });
  return {
    head,
    pages: wanted,
    list,
    entries,
    requests,
    digest: listed.toString(),
    ...(pins ? { pins } : {}),
  };
}

/**
 * Every entry of a table with its etag (each page's pins fetched in turn, where pages keep them
 * apart): for tools and tests that want the whole table, never what open() does.
 *
 * @example
 * const entries = await allEntries((await fetchTable(url, { token }))!);
 */
export async function allEntries(table: DatasetTable): Promise<TableEntryV1[]> {
  const { entries, pins } = table;
  if (!pins) return entries.entries();
  const out: TableEntryV1[] = [];
  // As many pages at once as the pins keep, PAGE_CONCURRENCY requests in flight.
  for (let first = 0; first < pins.parts.length; first += PINS_KEPT) {
    const batch = pins.parts.slice(first, first + PINS_KEPT);
    await pins.readyParts(batch.map((_, k) => first + k));
    for (const part of batch) for (let i = part.start; i < part.start + part.count; i++) out.push(entries.entry(i));
  }
  return out;
}

function pinsOf(store: TableStore, name: string): Promise<Uint8Array> {
  if (!store.pins)
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `Table page ${name} keeps its etags apart but this store cannot read them`,
    );
  return store.pins(name);
}

/** The entries of a page (in key order) whose key is under `dir` (UTF-8 bytes): one run of them, and where it starts. */
export function within(entries: EntryColumns, dir: Uint8Array): [number, EntryColumns] {
  let from = 0;
  while (from < entries.length && !entries.keyStartsWith(from, dir)) from++;
  let to = from;
  while (to < entries.length && entries.keyStartsWith(to, dir)) to++;
  return [from, entries.slice(from, to)];
}

/** Options of the edge's table routes. */
/** A head read already (or found missing) at a generation asked for (undefined: the latest). */
export interface ReadHead {
  readonly generation: number | undefined;
  readonly signed: Promise<unknown | undefined>;
}

/**
 * `store`, each head it reads told to `onRead`: what a lazy open read, for the whole listing
 * that follows it where the table is too small to read lazily.
 */
export function recordingHeads(store: TableStore, onRead: (read: ReadHead) => void): TableStore {
  return {
    ...store,
    head: (generation) => {
      const signed = store.head(generation);
      onRead({ generation, signed });
      return signed;
    },
  };
}

/** `store`, its head at `read.generation` answered once from `read` instead of asked for again. */
export function reusingHead(store: TableStore, read: ReadHead | undefined): TableStore {
  if (read === undefined) return store;
  let used = false;
  return {
    ...store,
    head: (generation) => {
      if (used || generation !== read.generation) return store.head(generation);
      used = true;
      return read.signed;
    },
  };
}

export type EdgeTableOptions = ManifestClientOptions & {
  generation?: number | undefined;
  /** Decompresses a page of a several-page response (default: DecompressionStream). */
  inflate?: ((gz: Uint8Array) => Promise<Uint8Array>) | undefined;
  /** Digests a page for the check against its head (default: WebCrypto's SHA-256). */
  digest?: PageDigest | undefined;
  /** The head read already at `generation` (by a lazy open before): not asked for again. */
  head?: ReadHead | undefined;
};

/**
 * The edge's table routes of a dataset as a TableStore, with the public keys that verify its
 * heads (fetched unless `opts.keys`) and the dataset's prefix: what fetchTable reads, and what
 * `openTable` takes to read a generation lazily through the edge.
 *
 * @example
 * const { store, keys, prefix } = edgeTableStore(url, { token });
 * const list = await openTable(store, keys); // then list.rangeUnder(`${prefix}/`), list.pagesAt(…)
 */
export function edgeTableStore(
  datasetUrl: string,
  opts: EdgeTableOptions = {},
): { store: TableStore; keys: Promise<PublicKeysV1>; prefix: string } {
  const at = parseDatasetUrl(datasetUrl);
  const inflate = opts.inflate ?? gunzip;
  const keys = opts.keys ? Promise.resolve(opts.keys) : fetchPublicKeys(at.edge, opts);
  keys.catch(() => {});
  const headers: Record<string, string> = opts.token ? { authorization: `Bearer ${opts.token}` } : {};
  const base = datasetBase(at);
  const store: TableStore = {
    async head(generation) {
      const res = await request(
        `${base}/table${generation === undefined ? "" : `?generation=${generation}`}`,
        opts,
        headers,
        {},
        [404],
      );
      if (res.status !== 404) {
        return res.json().catch((cause: unknown) => {
          throw new ManifestError(ManifestErrorCode.INVALID, "The dataset table head is not JSON", { cause });
        });
      }
      const body = ErrorBody.safeParse(await res.json().catch(() => undefined));
      if (body.success && body.data.error.code === "ERR_TABLE_MISSING") return undefined;
      throw new ManifestError(ManifestErrorCode.HTTP, `${new URL(base).pathname}/table answered 404`);
    },
    page: async (name) =>
      new Uint8Array(await (await request(`${base}/table/pages/${name}`, opts, headers)).arrayBuffer()),
    pins: async (name) =>
      new Uint8Array(await (await request(`${base}/table/pins/${name}`, opts, headers)).arrayBuffer()),
    pages: (names) => framed("pages", names),
    pinsMany: (names) => framed("pins", names),
  };
  /** Several pages (or their pins) in one framed body; undefined from an edge without the route. */
  async function framed(route: "pages" | "pins", names: readonly string[]): Promise<Uint8Array[] | undefined> {
    const res = await request(`${base}/table/${route}?names=${names.join(",")}`, opts, headers, {}, [404]);
    // 404 from an edge without the route (a missing page is 404 too, and then again page by page).
    if (res.status === 404) return void (await res.arrayBuffer().catch(() => undefined));
    let frames: Uint8Array[];
    try {
      frames = splitFrames(new Uint8Array(await res.arrayBuffer()), names.length);
    } catch (cause) {
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `${new URL(base).pathname}/table/${route} did not return ${names.length} framed pages: ${(cause as Error).message}`,
        { cause },
      );
    }
    return Promise.all(frames.map(inflate));
  }
  return { store, keys, prefix: at.prefix };
}

/**
 * The dataset's table from its edge (latest generation, or `generation`), verified. Undefined
 * when the edge has no table for it yet (404 ERR_TABLE_MISSING): the caller falls back to the
 * manifest.
 *
 * @example
 * const table = await fetchTable("http://127.0.0.1:8787/v1/datasets/gameplay", { token });
 */
export async function fetchTable(datasetUrl: string, opts: EdgeTableOptions = {}): Promise<DatasetTable | undefined> {
  const { store, keys, prefix } = edgeTableStore(datasetUrl, opts);
  const table = await readTable(reusingHead(store, opts.head), keys, prefix, opts.generation, opts.digest);
  return table && { ...table, requests: table.requests + (opts.keys ? 0 : 1) };
}

/**
 * Signed object and index URLs for up to 1000 objects of the dataset (the index URL pinned
 * to the etag given).
 *
 * @example
 * const { objects } = await fetchSignedUrls(datasetUrl, [{ key, etag }], { token });
 */
export async function fetchSignedUrls(
  datasetUrl: string,
  objects: readonly { key: string; etag: string }[],
  opts: ManifestClientOptions = {},
): Promise<SignedUrlsV1> {
  const at = parseDatasetUrl(datasetUrl);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
  };
  const res = await request(`${datasetBase(at)}/urls`, opts, headers, {
    method: "POST",
    body: JSON.stringify({ objects }),
  });
  const parsed = SignedUrlsV1.safeParse(await res.json().catch(() => undefined));
  if (!parsed.success)
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `POST /urls did not return SignedUrlsV1: ${parsed.error.message}`,
    );
  assertEdgeUrls(at.edge, parsed.data.objects);
  return parsed.data;
}

/**
 * Enqueues every object of an existing prefix for background indexing, one listing page
 * (≤ 1000 keys) per request, for buckets filled before the edge was deployed.
 *
 * @example
 * const { enqueued } = await enqueueDataset(datasetUrl, { token, onPage: (n) => bar.increment(n) });
 */
export async function enqueueDataset(
  datasetUrl: string,
  opts: ManifestClientOptions & { onPage?: (enqueued: number, more: boolean) => void } = {},
): Promise<{ enqueued: number; pages: number }> {
  const at = parseDatasetUrl(datasetUrl);
  const headers: Record<string, string> = opts.token ? { authorization: `Bearer ${opts.token}` } : {};
  let cursor: string | null = null;
  let enqueued = 0;
  let pages = 0;
  do {
    const res = await request(
      `${datasetBase(at)}/index${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`,
      opts,
      headers,
      { method: "POST" },
    );
    const page = EnqueuePageV1.safeParse(await res.json().catch(() => undefined));
    if (!page.success)
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `POST /index did not return EnqueuePageV1: ${page.error.message}`,
      );
    enqueued += page.data.enqueued;
    pages++;
    cursor = page.data.cursor;
    opts.onPage?.(page.data.enqueued, cursor !== null);
  } while (cursor);
  return { enqueued, pages };
}
