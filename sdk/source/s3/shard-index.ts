/**
 * `ec index s3://… --shard I/N`: one machine's part of a bucket's dataset table. It lists the
 * root, cuts the listing into chunks (table-shards.ts), and for each chunk it owns that no
 * record names yet, indexes the chunk's objects, stores them as final table pages (page codec,
 * ETags apart as pins, as the edge's publisher stores them), then the chunk's record, then, once
 * every chunk of its own is recorded, the shard's mark. Killed at any point, a rerun redoes only
 * the chunks with no record: a page is named by its chunk's content and rewritten with the same
 * bytes.
 */
import { gunzipSync } from "node:zlib";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { z } from "zod";
import { sha256 } from "../../../common/dataset-table/digest.js";
import { pageEntries } from "../../../common/dataset-table/page-pins.js";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { encodePage, mergePages } from "../../../common/dataset-table/generation.js";
import { tableKeys } from "../../../common/dataset-table/table-keys.js";
import { guessKind } from "../../../common/media-index/index.js";
import { SignedManifestV1, type TableEntryV1 } from "../../../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../../../common/shards.js";
import { orderedMap } from "../../pipeline/ordered-map.js";
import type { S3Bucket } from "./s3-bucket.js";
import { mapS3Error } from "./s3-errors.js";
import type { S3Source } from "./s3-source.js";
import {
  buildKeys,
  ChunkRecordV1,
  chunker,
  chunkPageName,
  chunkShard,
  type ShardMarkV1,
  type TableChunk,
} from "./table-shards.js";

/** Chunks indexed at once, and objects at once within each: 64 index builds in flight. */
const CHUNK_CONCURRENCY = 4;
const OBJECT_CONCURRENCY = 16;

/**
 * An object of the bucket as bytes, or undefined where there is none (or it cannot be read: a
 * caller treats it as not written yet and writes it again).
 */
export async function getStored(bucket: S3Bucket, key: string): Promise<Uint8Array | undefined> {
  try {
    const out = await bucket.client.send(new GetObjectCommand({ Bucket: bucket.location.bucket, Key: key }));
    return await out.Body!.transformToByteArray();
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404 || (err as { name?: string }).name === "NoSuchKey") return undefined;
    throw mapS3Error(err, bucket.context("read", key));
  }
}

/** A JSON object of the bucket parsed, or undefined where it is missing or not JSON. */
export async function getJson(bucket: S3Bucket, key: string): Promise<unknown> {
  const bytes = await getStored(bucket, key);
  if (!bytes) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

/** Stores one object of the table, as the edge's publisher does (gzip bodies say so). */
export async function putStored(
  bucket: S3Bucket,
  key: string,
  body: Uint8Array | string,
  o: { contentType?: string; gzip?: boolean } = {},
): Promise<void> {
  try {
    await bucket.client.send(
      new PutObjectCommand({
        Bucket: bucket.location.bucket,
        Key: key,
        Body: body,
        ContentType: o.contentType ?? "application/json",
        ...(o.gzip ? { ContentEncoding: "gzip" } : {}),
      }),
    );
  } catch (err) {
    throw mapS3Error(err, bucket.context("write", key));
  }
}

/** The record stored under a chunk's first key: this chunk's, or one it replaces; undefined where none parses. */
export async function storedRecord(bucket: S3Bucket, root: string, first: string): Promise<ChunkRecordV1 | undefined> {
  return ChunkRecordV1.safeParse(await getJson(bucket, buildKeys.chunk(root, first))).data;
}

export interface ShardOptions {
  readonly root: string;
  readonly shard: number;
  readonly of: number;
  readonly pageTarget: number;
  /** After each chunk of this shard: indexed (true) or found recorded (false), with its objects. */
  readonly onChunk?: (indexed: boolean, objects: number) => void;
}

export interface ShardResult {
  /** Chunks of the listing, and of this shard. */
  readonly chunks: number;
  readonly mine: number;
  /** Of this shard's: indexed now, and found recorded (skipped). */
  readonly indexed: number;
  readonly skipped: number;
  /** Objects in this shard's chunks, and those whose index was built now (not found in a chunk recorded before). */
  readonly objects: number;
  readonly objectsIndexed: number;
  readonly pagesWritten: number;
}

/**
 * The entries of a chunk recorded before under the same first key (the chunk this one replaces,
 * where objects were added, changed or removed within it), by key.
 */
async function recordedEntries(
  bucket: S3Bucket,
  root: string,
  record: ChunkRecordV1,
): Promise<Map<string, TableEntryV1>> {
  const out = new Map<string, TableEntryV1>();
  for (const ref of record.pages) {
    const [page, pins] = await Promise.all([
      getStored(bucket, tableKeys.page(root, ref.name)),
      ref.pins === undefined ? undefined : getStored(bucket, tableKeys.pins(root, ref.name)),
    ]);
    // A page gone or damaged only costs its objects' indexes.
    if (!page || (ref.pins !== undefined && !pins)) continue;
    try {
      const bytes = new Uint8Array(gunzipSync(page));
      if ((await sha256(bytes)) !== ref.sha256) continue;
      for (const e of pageEntries(bytes, pins && new Uint8Array(gunzipSync(pins)))) out.set(e.key, e);
    } catch {}
  }
  return out;
}

/** What `ec index` reads of the latest head: only fields every head format has. */
const LatestHead = z.object({ generation: z.number().int().positive(), shardBytes: z.number().int().positive() });

/** The latest generation's number and shard target (what the pages a shard writes store their shards at), or undefined where there is none. */
export async function latestHead(bucket: S3Bucket, root: string): Promise<z.infer<typeof LatestHead> | undefined> {
  const signed = SignedManifestV1.safeParse(await getJson(bucket, tableKeys.head(root))).data;
  if (!signed) return undefined;
  try {
    return LatestHead.parse(JSON.parse(signed.payload));
  } catch {
    return undefined;
  }
}

/** Stores one chunk's pages (and pins), then its record; returns the pages and the objects whose index it built. */
async function writeChunk(
  source: S3Source,
  root: string,
  chunk: TableChunk,
  pageTarget: number,
  shardBytes: number,
  replaced: ChunkRecordV1 | undefined,
): Promise<{ pages: number; built: number }> {
  // An object the replaced chunk holds at the same ETag and size keeps its entry: keyed by key and ETag.
  const prior = replaced ? await recordedEntries(source.bucket, root, replaced) : new Map<string, TableEntryV1>();
  let built = 0;
  const entries: TableEntryV1[] = [];
  for await (const entry of orderedMap(chunk.objects, OBJECT_CONCURRENCY, async (o) => {
    const known = prior.get(o.key);
    if (known && known.etag === o.etag && known.size === o.size) return known;
    built++;
    return tableEntry(await source.index({ key: o.key, size: o.size, etag: o.etag, kind: guessKind(o.key) }));
  }))
    entries.push(entry);
  // A fresh table's pages of these entries, named from the chunk: cut as the publisher cuts a new table.
  const { pages, written } = await mergePages(
    [],
    new Map(entries.map((e) => [e.key, e])),
    async () => [],
    (j) => chunkPageName(chunk, j),
    pageTarget,
  );
  for (const { ref, entries: slice } of written) {
    const page = await encodePage(root, slice, { apart: true, shardBytes });
    ref.sha256 = page.sha256;
    if (page.pins) ref.pins = page.pins.sha256;
    // Pins and page before the record: a record never names a page that is not stored.
    if (page.pins)
      await putStored(source.bucket, tableKeys.pins(root, ref.name), page.pins.gz, {
        contentType: "application/octet-stream",
        gzip: true,
      });
    await putStored(source.bucket, tableKeys.page(root, ref.name), page.gz, { gzip: true });
  }
  const record: ChunkRecordV1 = { version: 1, id: chunk.id, count: entries.length, pages };
  await putStored(source.bucket, buildKeys.chunk(root, chunk.objects[0]!.key), JSON.stringify(record));
  return { pages: written.length, built };
}

/**
 * Indexes shard `shard` of `of` of the root's table and stores its pages and records; returns
 * what it did. A failed index or bucket request throws after the chunks in flight settle: the
 * chunks recorded by then stay done for the rerun.
 *
 * @example
 * await indexShard(source, { root: "gameplay", shard: 2, of: 4, pageTarget: 1000 });
 */
export async function indexShard(source: S3Source, o: ShardOptions): Promise<ShardResult> {
  const cut = chunker(o.root, o.pageTarget);
  // The target the publish cuts shards at (the latest head's, else the default): the pages store their shards at it.
  const shardBytes = (await latestHead(source.bucket, o.root))?.shardBytes ?? DEFAULT_SHARD_TARGET_BYTES;
  const running = new Set<Promise<void>>();
  let failure: unknown;
  let chunks = 0;
  let mine = 0;
  let indexed = 0;
  let skipped = 0;
  let objects = 0;
  let objectsIndexed = 0;
  let pagesWritten = 0;
  const take = async (chunk: TableChunk) => {
    const stored = await storedRecord(source.bucket, o.root, chunk.objects[0]!.key);
    if (stored?.id === chunk.id && stored.count === chunk.objects.length) {
      skipped++;
      o.onChunk?.(false, chunk.objects.length);
      return;
    }
    const wrote = await writeChunk(source, o.root, chunk, o.pageTarget, shardBytes, stored);
    pagesWritten += wrote.pages;
    indexed++;
    objectsIndexed += wrote.built;
    o.onChunk?.(true, chunk.objects.length);
  };
  const submit = async (ready: TableChunk[]) => {
    for (const chunk of ready) {
      chunks++;
      if (chunkShard(chunk, o.of) !== o.shard) continue;
      mine++;
      objects += chunk.objects.length;
      while (running.size >= CHUNK_CONCURRENCY) await Promise.race(running);
      if (failure !== undefined) return;
      const p: Promise<void> = take(chunk).then(
        () => void running.delete(p),
        (err: unknown) => {
          failure ??= err;
          running.delete(p);
        },
      );
      running.add(p);
    }
  };
  try {
    for await (const page of source.bucket.pages(`${o.root}/`)) {
      await submit(cut.push(page));
      if (failure !== undefined) break;
    }
    if (failure === undefined) await submit(cut.flush());
  } finally {
    await Promise.all(running);
  }
  if (failure !== undefined) throw failure;
  const mark: ShardMarkV1 = {
    version: 1,
    shard: o.shard,
    of: o.of,
    pageTarget: o.pageTarget,
    chunks: mine,
    objects,
    finishedAt: Math.floor(Date.now() / 1000),
  };
  await putStored(source.bucket, buildKeys.shard(o.root, o.shard, o.of), JSON.stringify(mark));
  return { chunks, mine, indexed, skipped, objects, objectsIndexed, pagesWritten };
}

/**
 * The shards of `of` whose mark is stored: where all are, the last one to finish publishes.
 *
 * @example
 * await finishedShards(bucket, "gameplay", 4); // [0, 1, 2, 3]
 */
export async function finishedShards(bucket: S3Bucket, root: string, of: number): Promise<number[]> {
  const done: number[] = [];
  for await (const page of bucket.pages(`${buildKeys.shardsPrefix(root)}${of}/`))
    for (const o of page) {
      const m = /\/(\d+)\.json$/.exec(o.key);
      if (m && Number(m[1]) < of) done.push(Number(m[1]));
    }
  return done.sort((a, b) => a - b);
}
