/**
 * `ec index s3://… --publish`: the next generation of a bucket's dataset table from the shards'
 * chunk records. It lists the root again, cuts it into the same chunks, and reads each chunk's
 * record (one GET a chunk, never a page): every chunk recorded, the head names their pages in
 * key order, signed as the edge signs its heads; some missing, it refuses, naming the shards
 * that own them (not run, still running, died, or listed the bucket before it changed).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { buildGeneration } from "../../../common/dataset-table/generation.js";
import { tableKeys } from "../../../common/dataset-table/table-keys.js";
import { type ManifestSigner, publicKeys, signJson } from "../../../common/manifest-sign.js";
import type { TablePageRefV1 } from "../../../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../../../common/shards.js";
import { SdkError } from "../../errors.js";
import { orderedMap } from "../../pipeline/ordered-map.js";
import type { S3Bucket } from "./s3-bucket.js";
import { getJson, latestHead, putStored } from "./shard-index.js";
import { buildKeys, ChunkRecordV1, chunker, chunkShard, ShardMarkV1 } from "./table-shards.js";

/** Chunk records read at once. */
const RECORD_CONCURRENCY = 32;

export interface PublishShardsOptions {
  readonly root: string;
  readonly pageTarget: number;
  readonly signer: ManifestSigner;
  /** Shards the run was split into; default: the N of the shard mark stored last. */
  readonly of?: number;
  /** The dataset URL, for messages. */
  readonly url: string;
  readonly now?: number;
}

export interface PublishShardsResult {
  readonly generation: number;
  /** False where the latest generation already names these pages: nothing was written. */
  readonly published: boolean;
  readonly objects: number;
  readonly pages: number;
  readonly chunks: number;
  readonly of: number;
}

/** The N of the shard mark stored last (its `finishedAt`), or 1 where no shard has finished. */
async function lastRunShards(bucket: S3Bucket, root: string): Promise<number> {
  let latest: { of: number; at: number } | undefined;
  for await (const page of bucket.pages(buildKeys.shardsPrefix(root)))
    for (const o of page) {
      const mark = ShardMarkV1.safeParse(await getJson(bucket, o.key)).data;
      if (mark && (!latest || mark.finishedAt >= latest.at)) latest = { of: mark.of, at: mark.finishedAt };
    }
  return latest?.of ?? 1;
}

/** What the last publish named: its generation and a digest of its pages, so an unchanged run publishes nothing. */
const PublishedV1 = z.object({ version: z.literal(1), generation: z.number().int().positive(), pages: z.string() });

function pagesDigest(pages: readonly TablePageRefV1[]): string {
  const h = createHash("sha256");
  for (const p of pages) h.update(`${p.name} ${p.sha256}\n`);
  return h.digest("hex");
}

/**
 * Publishes the generation the shards' records make up, or throws ERR_INDEX_SHARDS_INCOMPLETE
 * naming the shards whose chunks are not all recorded.
 *
 * @example
 * await publishShards(bucket, { root: "gameplay", pageTarget: 1000, signer, url: "s3://videos/gameplay" });
 */
export async function publishShards(bucket: S3Bucket, o: PublishShardsOptions): Promise<PublishShardsResult> {
  const of = o.of ?? (await lastRunShards(bucket, o.root));
  // Only (id, owner) kept per chunk: the listing itself is not held.
  const chunks: { id: string; first: string; shard: number; count: number }[] = [];
  const cut = chunker(o.root, o.pageTarget);
  const keep = (ready: ReturnType<typeof cut.flush>) => {
    for (const c of ready)
      chunks.push({ id: c.id, first: c.objects[0]!.key, shard: chunkShard(c, of), count: c.objects.length });
  };
  for await (const page of bucket.pages(`${o.root}/`)) keep(cut.push(page));
  keep(cut.flush());
  const pages: TablePageRefV1[] = [];
  const missing = new Map<number, number>();
  for await (const [chunk, record] of orderedMap(chunks, RECORD_CONCURRENCY, async (c) => {
    const record = ChunkRecordV1.safeParse(await getJson(bucket, buildKeys.chunk(o.root, c.first))).data;
    return [c, record && record.id === c.id && record.count === c.count ? record : undefined] as const;
  })) {
    if (record) pages.push(...record.pages);
    else missing.set(chunk.shard, (missing.get(chunk.shard) ?? 0) + 1);
  }
  if (missing.size > 0) {
    const shards = [...missing.keys()].sort((a, b) => a - b);
    const counts = shards.map((s) => `${s} (${missing.get(s)} of its chunks)`).join(", ");
    throw new SdkError(
      "ERR_INDEX_SHARDS_INCOMPLETE",
      `Expected every shard of ${of} to have indexed its chunks of ${o.url} before publishing but shard${shards.length > 1 ? "s" : ""} ${counts} ha${shards.length > 1 ? "ve" : "s"} not (not run yet, still running, died, listed the bucket before it changed, or ran with another --page-target than ${o.pageTarget}): run ${shards.map((s) => `\`ec index ${o.url} --shard ${s}/${of}\``).join(", ")}, then publish again`,
    );
  }
  const previous = await latestHead(bucket, o.root);
  const objects = chunks.reduce((n, c) => n + c.count, 0);
  const digest = pagesDigest(pages);
  const last = PublishedV1.safeParse(await getJson(bucket, buildKeys.published(o.root))).data;
  if (previous && last && last.generation === previous.generation && last.pages === digest)
    return {
      generation: previous.generation,
      published: false,
      objects,
      pages: pages.length,
      chunks: chunks.length,
      of,
    };
  const now = o.now ?? Math.floor(Date.now() / 1000);
  const shardBytes = previous?.shardBytes ?? DEFAULT_SHARD_TARGET_BYTES;
  // The shards' pages as the previous generation's and no change: the generation functions
  // name them as they are and store nothing but what the head format itself needs.
  const { head, pages: stored } = await buildGeneration(
    { version: 1, root: o.root, generation: previous?.generation ?? 0, createdAt: now, shardBytes, objects, pages },
    new Map(),
    async () => [],
    { root: o.root, shardBytes, now, pageTarget: o.pageTarget, pinsApart: true },
  );
  for (const p of stored) {
    if (p.pins)
      await putStored(bucket, tableKeys.pins(o.root, p.name), p.pins, {
        contentType: "application/octet-stream",
        gzip: true,
      });
    await putStored(bucket, tableKeys.page(o.root, p.name), p.gz, { gzip: true });
  }
  const body = JSON.stringify(await signJson(head, o.signer));
  // The generation before the head, as the edge's publisher writes them.
  await putStored(bucket, tableKeys.generation(o.root, head.generation), body);
  await putStored(bucket, tableKeys.head(o.root), body);
  await putStored(bucket, tableKeys.publicKeys(), JSON.stringify(publicKeys([o.signer])));
  const published: z.infer<typeof PublishedV1> = { version: 1, generation: head.generation, pages: digest };
  await putStored(bucket, buildKeys.published(o.root), JSON.stringify(published));
  return { generation: head.generation, published: true, objects, pages: pages.length, chunks: chunks.length, of };
}
