/**
 * `ec index s3://… --shard I/N`: one machine's part of a bucket's dataset table. It lists the
 * root, cuts the listing into chunks (table-shards.ts), and for each chunk it owns that no
 * record names yet, indexes the chunk's objects, stores them as final table pages (page codec,
 * ETags apart as pins, as the edge's publisher stores them), then the chunk's record, then, once
 * every chunk of its own is recorded, the shard's mark. Killed at any point, a rerun redoes only
 * the chunks with no record: a page is named by its chunk's content and rewritten with the same
 * bytes.
 */
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { encodePage, mergePages } from "../../../common/dataset-table/generation.js";
import { tableKeys } from "../../../common/dataset-table/table-keys.js";
import { guessKind } from "../../../common/media-index/index.js";
import type { TableEntryV1 } from "../../../common/schema/index.js";
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

/** The record of a chunk, where one is stored and names exactly that chunk. */
export async function chunkRecord(
  bucket: S3Bucket,
  root: string,
  chunk: TableChunk,
): Promise<ChunkRecordV1 | undefined> {
  const record = ChunkRecordV1.safeParse(await getJson(bucket, buildKeys.chunk(root, chunk.id))).data;
  return record && record.id === chunk.id && record.count === chunk.objects.length ? record : undefined;
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
  /** Objects in this shard's chunks, and indexed now. */
  readonly objects: number;
  readonly objectsIndexed: number;
  readonly pagesWritten: number;
}

/** Stores one chunk's pages (and pins), then its record. */
async function writeChunk(source: S3Source, root: string, chunk: TableChunk, pageTarget: number): Promise<number> {
  const entries: TableEntryV1[] = [];
  for await (const entry of orderedMap(chunk.objects, OBJECT_CONCURRENCY, async (o) =>
    tableEntry(await source.index({ key: o.key, size: o.size, etag: o.etag, kind: guessKind(o.key) })),
  ))
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
    const page = await encodePage(root, slice, { apart: true });
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
  await putStored(source.bucket, buildKeys.chunk(root, chunk.id), JSON.stringify(record));
  return written.length;
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
    if (await chunkRecord(source.bucket, o.root, chunk)) {
      skipped++;
      o.onChunk?.(false, chunk.objects.length);
      return;
    }
    pagesWritten += await writeChunk(source, o.root, chunk, o.pageTarget);
    indexed++;
    objectsIndexed += chunk.objects.length;
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
