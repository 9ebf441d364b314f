/**
 * Old generations of a bucket's own dataset table (`ec index s3://…`, no edge) and the table
 * objects only they named, deleted under the edge's retention rule (edge/table/collect.ts): the
 * newest `generations` and every generation younger than `seconds` stay readable with all they
 * name. A page or directory page (with its pins) that none of them names and that is older than
 * `seconds` goes, and so does a chunk record that names one, before it, so that a rerun indexes
 * that chunk again instead of skipping it. Nothing younger than `seconds` goes whatever names
 * it: a shard still running has stored pages that no head names yet.
 */
import { gunzipSync } from "node:zlib";
import { DeleteObjectCommand } from "@aws-sdk/client-s3";
import { decodeDirectory } from "../../../common/dataset-table/directory.js";
import { DEFAULT_RETENTION, type Retention } from "../../../common/dataset-table/retention.js";
import { tableKeys, tablePrefix } from "../../../common/dataset-table/table-keys.js";
import { SignedManifestV1, TableHeadV1 } from "../../../common/schema/index.js";
import { orderedMap } from "../../pipeline/ordered-map.js";
import { mapS3Error } from "./s3-errors.js";
import type { ListedObject, S3Bucket } from "./s3-bucket.js";
import { getJson, getStored } from "./shard-index.js";
import { ChunkRecordV1 } from "./table-shards.js";

/** Reads and deletes in flight at once. */
const CONCURRENCY = 16;

export interface CollectResult {
  /** Generations whose heads were deleted. */
  readonly dropped: number[];
  /** Generations kept, newest last. */
  readonly kept: number[];
  /** Pages, pins and directory pages deleted. */
  readonly pages: number;
  /** Chunk records deleted with a page they named. */
  readonly records: number;
}

async function headOf(bucket: S3Bucket, key: string): Promise<TableHeadV1 | undefined> {
  const signed = SignedManifestV1.safeParse(await getJson(bucket, key)).data;
  if (!signed) return undefined;
  return TableHeadV1.safeParse(JSON.parse(signed.payload)).data;
}

async function remove(bucket: S3Bucket, keys: readonly string[]): Promise<void> {
  for await (const _ of orderedMap(keys, CONCURRENCY, async (key) => {
    try {
      await bucket.client.send(new DeleteObjectCommand({ Bucket: bucket.location.bucket, Key: key }));
    } catch (err) {
      throw mapS3Error(err, bucket.context("write", key));
    }
  }));
}

/**
 * Drops `root`'s generations that `keep` no longer keeps and the table objects only they named.
 * A run stopped half-way leaves every kept generation whole: records go before their pages,
 * pages before the heads of the generations dropped.
 *
 * @example
 * await collectBucketTable(bucket, "gameplay", { generations: 16, seconds: 604800 }); // { dropped: [1, 2], kept: [3, …], pages: 6, records: 0 }
 */
export async function collectBucketTable(
  bucket: S3Bucket,
  root: string,
  keep: Retention = DEFAULT_RETENTION,
  now = Date.now() / 1000,
): Promise<CollectResult> {
  const latest = await headOf(bucket, tableKeys.head(root));
  const none: CollectResult = { dropped: [], kept: [], pages: 0, records: 0 };
  if (!latest) return none;
  const objects = await bucket.list(tablePrefix(root));
  const genPrefix = tableKeys.generation(root, 0).replace(/0\.json$/, "");
  const generations = objects
    .map((o) => (o.key.startsWith(genPrefix) ? Number(o.key.slice(genPrefix.length).replace(/\.json$/, "")) : NaN))
    .filter((g) => Number.isInteger(g) && g > 0 && g <= latest.generation)
    .sort((a, b) => a - b);
  // Oldest first, as the edge drops them: up to the first that the count or the age keeps.
  const heads = new Map<number, TableHeadV1>([[latest.generation, latest]]);
  const dropped: number[] = [];
  const newest = latest.generation - Math.max(1, keep.generations);
  let g = 0;
  for (; g < generations.length; g++) {
    const n = generations[g]!;
    if (n > newest) break;
    const head = await headOf(bucket, tableKeys.generation(root, n));
    if (head && head.createdAt > now - keep.seconds) {
      heads.set(n, head);
      break;
    }
    dropped.push(n);
  }
  for (const n of generations.slice(g))
    if (!heads.has(n)) {
      const head = await headOf(bucket, tableKeys.generation(root, n));
      // A kept generation that cannot be read: what it names is unknown, so nothing is deleted.
      if (!head) return { ...none, kept: generations.slice(g) };
      heads.set(n, head);
    }
  // What the kept generations name: their directory pages and every page these list.
  const live = new Set<string>();
  const directories = new Set<string>();
  for (const head of heads.values()) {
    if (head.version === 1) for (const p of head.pages) live.add(p.name);
    else for (const d of head.directories) directories.add(d.name);
  }
  for await (const pages of orderedMap([...directories], CONCURRENCY, async (name) => {
    const bytes = await getStored(bucket, tableKeys.page(root, name));
    // A kept directory page that cannot be read: what it lists is unknown, so nothing is deleted.
    if (!bytes) return undefined;
    return decodeDirectory(new Uint8Array(gunzipSync(bytes)));
  })) {
    if (!pages) return { ...none, kept: [...heads.keys()].sort((a, b) => a - b) };
    for (const p of pages) live.add(p.name);
  }
  for (const name of directories) live.add(name);
  const old = (o: ListedObject) => (o.modified ?? 0) <= now - keep.seconds;
  const pagesPrefix = tableKeys.page(root, "").replace(/\.json$/, "");
  // A page's object and its pins object share the page's name.
  const deadPages: ListedObject[] = [];
  const dead = new Set<string>();
  for (const o of objects) {
    if (!o.key.startsWith(pagesPrefix) || !old(o)) continue;
    const name = o.key.slice(pagesPrefix.length).replace(/\.(json|pins)$/, "");
    if (live.has(name)) continue;
    deadPages.push(o);
    dead.add(name);
  }
  // A record naming a page about to go goes first: a rerun then indexes its chunk again.
  const chunkPrefix = `${tablePrefix(root)}build/chunks/`;
  const records: string[] = [];
  for await (const r of orderedMap(
    objects.filter((o) => o.key.startsWith(chunkPrefix) && old(o)),
    CONCURRENCY,
    async (o) => {
      const record = ChunkRecordV1.safeParse(await getJson(bucket, o.key)).data;
      return record?.pages.some((p) => dead.has(p.name)) ? o.key : undefined;
    },
  ))
    if (r) records.push(r);
  await remove(bucket, records);
  await remove(
    bucket,
    deadPages.map((o) => o.key),
  );
  await remove(
    bucket,
    dropped.map((n) => tableKeys.generation(root, n)),
  );
  return {
    dropped,
    kept: [...heads.keys()].sort((a, b) => a - b),
    pages: deadPages.length,
    records: records.length,
  };
}
