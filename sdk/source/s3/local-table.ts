/**
 * The local table of a bucket prefix that has no edge-written table: what planning needs of
 * each object (the edge table's TableEntryV1), built on the client and kept in the index disk
 * cache as the edge keeps its table: pages by key range in the edge's page codec (gzip JSON
 * with a SHA-256), and a small head that names them. The next open plans from it where the
 * listing's (key, etag, size) matches, indexes only new or changed objects and rewrites only
 * the pages those fall into. Tables have a bound of their own in the cache, apart from the
 * indexes' (an epoch's lazy index reads never evict them); a table past it keeps its pages in key
 * order up to the bound and counts the objects of the rest, which every open indexes again and
 * says so. A missing page, or one that fails its checksum or schema, only means its objects are
 * indexed again, never a wrong plan.
 */
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { z } from "zod";
import { sha256 } from "../../../common/dataset-table/digest.js";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { encodePage, mergePages, type TableChanges } from "../../../common/dataset-table/generation.js";
import { INDEX_FORMAT_VERSION } from "../../../common/media-index/codec.js";
import { TablePageRefV1, type IndexV1, type TableEntryV1 } from "../../../common/schema/index.js";
import { decodePageBytes } from "../../../common/dataset-table/page-codec.js";
import { orderedMap } from "../../pipeline/ordered-map.js";
import type { DatasetObject } from "../source.js";
import type { IndexDiskCache } from "./index-disk-cache.js";

/** The head file of a local table: its pages in key order. */
const LocalTableHeadV2 = z.object({
  version: z.literal(2),
  /** Endpoint and bucket, and the prefix: a table never answers for another dataset. */
  scope: z.string(),
  prefix: z.string(),
  /** The index format its entries were reduced from: a newer indexer rebuilds the table. */
  index: z.number().int(),
  /** Rewrites so far: the pages one writes are named `${rewrite}-${n}`, never a name the previous head holds. */
  rewrite: z.number().int().positive(),
  objects: z.number().int().nonnegative(),
  pages: z.array(TablePageRefV1),
});
type LocalTableHead = z.infer<typeof LocalTableHeadV2>;

/** Indexes built at once when the local table lacks objects, as the planner fetches them. */
const INDEX_CONCURRENCY = 64;
/** Pages read from disk at once. */
const PAGE_CONCURRENCY = 16;

export interface LocalTableAt {
  /** Endpoint and bucket. */
  readonly scope: string;
  readonly prefix: string;
  /** Entries a new page is cut to (the edge's PAGE_TARGET by default). */
  readonly pageTarget?: number;
}

function base(at: LocalTableAt): string {
  return createHash("sha256").update(`table\n${at.scope}\n${at.prefix}`).digest("hex");
}

/** The cache file name of the head of the local table of (scope, prefix). */
export function localTableName(scope: string, prefix: string): string {
  return `${base({ scope, prefix })}.tbl`;
}

/** The cache file name of one page of that table. */
export function localPageName(at: LocalTableAt, page: string): string {
  return `${base(at)}.${page}.tbp`;
}

function safeJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

/** The head of the table of `at`, or undefined where it is missing, corrupt, foreign or from an older indexer. */
async function readHead(cache: IndexDiskCache, at: LocalTableAt): Promise<LocalTableHead | undefined> {
  return cache.getFile(localTableName(at.scope, at.prefix), (bytes) => {
    const h = LocalTableHeadV2.safeParse(safeJson(bytes)).data;
    if (!h || h.scope !== at.scope || h.prefix !== at.prefix || h.index !== INDEX_FORMAT_VERSION) return undefined;
    return h.pages.reduce((n, p) => n + p.count, 0) === h.objects ? h : undefined;
  });
}

/** A page's entries, or undefined where it is missing or not the page its head names (digest, count, range). */
async function readPage(
  cache: IndexDiskCache,
  at: LocalTableAt,
  ref: TablePageRefV1,
): Promise<TableEntryV1[] | undefined> {
  return cache.getFile(localPageName(at, ref.name), async (bytes) => {
    const json = new Uint8Array(gunzipSync(bytes));
    if ((await sha256(json)) !== ref.sha256) return undefined;
    let page: ReturnType<typeof decodePageBytes>;
    try {
      page = decodePageBytes(json);
    } catch {
      return undefined;
    }
    if (page.root !== at.prefix || page.entries.length !== ref.count) return undefined;
    const entries = page.entries.entries();
    return entries[0]!.key === ref.first && entries.at(-1)!.key === ref.last ? entries : undefined;
  });
}

/** What one call did: for `ec inspect`, the benchmark and tests. */
export interface LocalTableResult {
  /** Each listed object's entry, in listing order. */
  readonly entries: TableEntryV1[];
  /** Objects whose index was read (new, changed, or on a page that was missing or rejected). */
  readonly indexed: number;
  /** Objects the local table answered for. */
  readonly reused: number;
  readonly pagesRead: number;
  readonly pagesWritten: number;
  /** Objects on pages the table's bound (IndexDiskCache.tableBytes) left out: the next open indexes them again. */
  readonly unkept: number;
}

/**
 * Each listed object's table entry, in listing order: from the local table where it holds the
 * same (key, etag, size), else from the object's index (built, or read from the per-object
 * cache). Where anything differs (new, changed or removed objects, lost pages), the pages it
 * falls into are rewritten, then the head, then pages no head names any more are dropped. A
 * failed index throws, as planning from indexes does.
 *
 * @example
 * const { entries } = await localTableEntries(objects, (o) => source.index(o), cache, { scope, prefix });
 */
export async function localTableEntries(
  objects: readonly DatasetObject[],
  index: (object: DatasetObject) => Promise<IndexV1>,
  cache: IndexDiskCache,
  at: LocalTableAt,
): Promise<LocalTableResult> {
  const head = await readHead(cache, at);
  const refs = head?.pages ?? [];
  const loaded = new Map<string, TableEntryV1[]>();
  for await (const [ref, entries] of orderedMap(refs, PAGE_CONCURRENCY, async (ref) => {
    return [ref, await readPage(cache, at, ref)] as const;
  }))
    if (entries) loaded.set(ref.name, entries);
  const known = new Map<string, TableEntryV1>();
  for (const entries of loaded.values()) for (const e of entries) known.set(e.key, e);

  const changes = new Map<string, TableEntryV1 | null>();
  const entries: TableEntryV1[] = [];
  for await (const entry of orderedMap(objects, INDEX_CONCURRENCY, async (object) => {
    const hit = known.get(object.key);
    if (hit && hit.etag === object.etag && hit.size === object.size) return hit;
    const fresh = tableEntry(await index(object));
    changes.set(fresh.key, fresh);
    return fresh;
  }))
    entries.push(entry);
  const indexed = changes.size;
  const listed = new Set(objects.map((o) => o.key));
  for (const key of known.keys()) if (!listed.has(key)) changes.set(key, null);
  const lost = refs.some((ref) => !loaded.has(ref.name));
  const { written, unkept } =
    changes.size > 0 || lost ? await rewrite(cache, at, head, changes, loaded) : { written: 0, unkept: 0 };
  return {
    entries,
    indexed,
    reused: entries.length - indexed,
    pagesRead: loaded.size,
    pagesWritten: written,
    unkept,
  };
}

/**
 * Stores the pages `changes` fall into (those they replace dropped first, so their room is the
 * new pages'; a head naming a missing page only costs its objects' indexes), in key order while
 * they fit the tables' bound with room left for the head, then the head, then drops the pages
 * no longer named. Returns the pages stored and the objects of those left out.
 */
async function rewrite(
  cache: IndexDiskCache,
  at: LocalTableAt,
  head: LocalTableHead | undefined,
  changes: TableChanges,
  loaded: ReadonlyMap<string, TableEntryV1[]>,
): Promise<{ written: number; unkept: number }> {
  const n = (head?.rewrite ?? 0) + 1;
  const merged =
    changes.size === 0
      ? { pages: [...(head?.pages ?? [])], written: [] }
      : await mergePages(
          head?.pages ?? [],
          changes,
          async (ref) => loaded.get(ref.name) ?? [],
          (i) => `${n}-${i}`,
          at.pageTarget,
        );
  const kept = new Set(merged.pages.map((ref) => ref.name));
  for (const ref of head?.pages ?? []) if (!kept.has(ref.name)) await cache.dropFile(localPageName(at, ref.name));
  const headOf = (pages: TablePageRefV1[]): LocalTableHead => ({
    version: 2,
    scope: at.scope,
    prefix: at.prefix,
    index: INDEX_FORMAT_VERSION,
    rewrite: n,
    objects: pages.reduce((sum, p) => sum + p.count, 0),
    pages,
  });
  const json = (h: LocalTableHead) => new TextEncoder().encode(JSON.stringify(h));
  // The head naming every page, each digest filled in: the most it can take.
  const sha = await sha256(new Uint8Array(0));
  const reserve = {
    name: localTableName(at.scope, at.prefix),
    bytes: json(headOf(merged.pages.map((ref) => ({ ...ref, sha256: ref.sha256 || sha })))).length,
  };
  const keep = `${base(at)}.`;
  const stored = new Set<string>();
  let unkept = 0;
  for (const { ref, entries } of merged.written) {
    // Past the bound once, past it for every later page: they wait for a larger bound, in key order.
    if (unkept === 0) {
      const page = await encodePage(at.prefix, entries);
      ref.sha256 = page.sha256;
      if (await cache.putFile(localPageName(at, ref.name), page.gz, { keep, reserve })) {
        stored.add(ref.name);
        continue;
      }
    }
    unkept += ref.count;
  }
  // A page that could not be read, or not kept, and that no listed object falls into any more: nothing to keep.
  const pages = merged.pages.filter((ref) => stored.has(ref.name) || loaded.has(ref.name));
  await cache.putFile(reserve.name, json(headOf(pages)), { keep });
  const named = new Set(pages.map((ref) => localPageName(at, ref.name)));
  for (const name of await cache.names(keep)) if (name.endsWith(".tbp") && !named.has(name)) await cache.dropFile(name);
  return { written: stored.size, unkept };
}
