/**
 * The local table of a bucket prefix that has no edge-written table: what planning needs of
 * each object (the edge table's TableEntryV1, one gzip page in the edge's page codec), built on
 * the client and kept in the index disk cache. The next open plans from it where the listing's
 * (key, etag) matches and indexes only new or changed objects; a file that fails its checksum
 * or its schema is rebuilt, never trusted.
 */
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { z } from "zod";
import { sha256 } from "../../../common/dataset-table/digest.js";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { encodePage } from "../../../common/dataset-table/generation.js";
import { INDEX_FORMAT_VERSION } from "../../../common/media-index/codec.js";
import { TablePageV1, type IndexV1, type TableEntryV1 } from "../../../common/schema/index.js";
import { orderedMap } from "../../pipeline/ordered-map.js";
import type { DatasetObject } from "../source.js";
import type { IndexDiskCache } from "./index-disk-cache.js";

/** The head line of a local table file; the gzip page follows it. */
const LocalTableHeadV1 = z.object({
  version: z.literal(1),
  /** Endpoint and bucket, and the prefix: a table never answers for another dataset. */
  scope: z.string(),
  prefix: z.string(),
  /** The index format its entries were reduced from: a newer indexer rebuilds the table. */
  index: z.number().int(),
  objects: z.number().int().nonnegative(),
  /** base64url SHA-256 of the page's JSON, as an edge table head records it. */
  sha256: z.string(),
});

/** Indexes built at once when the local table lacks objects, as the planner fetches them. */
const INDEX_CONCURRENCY = 64;

const NEWLINE = 0x0a;

/** The cache file name of the local table of (scope, prefix). */
export function localTableName(scope: string, prefix: string): string {
  return `${createHash("sha256").update(`table\n${scope}\n${prefix}`).digest("hex")}.tbl`;
}

/**
 * The file: one JSON head line, then the entries as an edge table page (gzip JSON).
 *
 * @example
 * await cache.putFile(localTableName(scope, prefix), await encodeLocalTable(scope, prefix, entries));
 */
export async function encodeLocalTable(scope: string, prefix: string, entries: TableEntryV1[]): Promise<Uint8Array> {
  const page = await encodePage(prefix, entries);
  const head = JSON.stringify({
    version: 1,
    scope,
    prefix,
    index: INDEX_FORMAT_VERSION,
    objects: entries.length,
    sha256: page.sha256,
  } satisfies z.infer<typeof LocalTableHeadV1>);
  const line = new TextEncoder().encode(`${head}\n`);
  const out = new Uint8Array(line.length + page.gz.length);
  out.set(line);
  out.set(page.gz, line.length);
  return out;
}

/**
 * The entries of a local table file, or undefined where it is not the table of (scope,
 * prefix) or fails its checksum (a truncated or corrupt file: the caller rebuilds it).
 */
export async function decodeLocalTable(
  bytes: Uint8Array,
  scope: string,
  prefix: string,
): Promise<TableEntryV1[] | undefined> {
  const end = bytes.indexOf(NEWLINE);
  if (end < 0) return undefined;
  const head = LocalTableHeadV1.safeParse(safeJson(bytes.subarray(0, end)));
  const h = head.data;
  if (!h || h.scope !== scope || h.prefix !== prefix || h.index !== INDEX_FORMAT_VERSION) return undefined;
  let json: Uint8Array;
  try {
    json = new Uint8Array(gunzipSync(bytes.subarray(end + 1)));
  } catch {
    return undefined;
  }
  if ((await sha256(json)) !== h.sha256) return undefined;
  const page = TablePageV1.safeParse(safeJson(json));
  if (!page.success || page.data.entries.length !== h.objects) return undefined;
  return page.data.entries;
}

function safeJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

/**
 * Each listed object's table entry, in listing order: from the local table where it holds the
 * same (key, etag, size), else from the object's index (built, or read from the per-object
 * cache). The updated table (new and changed objects in, removed ones out) is stored when it
 * differs from the one read. A failed index throws, as planning from indexes does. `reused`
 * counts the entries the local table answered for.
 *
 * @example
 * const entries = await localTableEntries(objects, (o) => source.index(o), cache, { scope, prefix });
 */
export async function localTableEntries(
  objects: readonly DatasetObject[],
  index: (object: DatasetObject) => Promise<IndexV1>,
  cache: IndexDiskCache,
  at: { scope: string; prefix: string },
): Promise<{ entries: TableEntryV1[]; indexed: number; reused: number }> {
  const name = localTableName(at.scope, at.prefix);
  const stored = await cache.getFile(name, (bytes) => decodeLocalTable(bytes, at.scope, at.prefix));
  const known = new Map((stored ?? []).map((e) => [e.key, e]));
  let indexed = 0;
  const entries: TableEntryV1[] = [];
  for await (const entry of orderedMap(objects, INDEX_CONCURRENCY, async (object) => {
    const hit = known.get(object.key);
    if (hit && hit.etag === object.etag && hit.size === object.size) return hit;
    indexed++;
    return tableEntry(await index(object));
  }))
    entries.push(entry);
  if (indexed > 0 || entries.length !== known.size)
    await cache.putFile(name, await encodeLocalTable(at.scope, at.prefix, entries));
  return { entries, indexed, reused: entries.length - indexed };
}
