/**
 * How `ec index s3://… --shard I/N` splits a bucket's table among machines. The listing is cut
 * into runs of consecutive keys (chunks) by a rule local to each key: a chunk starts before a
 * key whose hash falls below 2^32 / pageTarget (about one key in pageTarget), so a chunk is
 * about a page of objects and its bounds depend only on the keys around them, not on the
 * listing's length or on who lists it. Each chunk belongs to one shard, the hash of its first
 * key mod N: shards split the work evenly, each chunk is a contiguous key range its owner
 * indexes and writes as final table pages (no two shards write one page, and the publisher
 * only names them in key order, reading none), and a chunk done is recorded with its content's
 * hash (its keys, ETags and sizes) under its first key, so a rerun skips it with one GET and a
 * chunk that changed keeps the entries of its objects that did not.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { tablePrefix } from "../../../common/dataset-table/table-keys.js";
import { INDEX_FORMAT_VERSION } from "../../../common/media-index/codec.js";
import { TablePageRefV1 } from "../../../common/schema/index.js";
import type { ListedObject } from "./s3-bucket.js";

/** A chunk is cut at this many times the page target whatever the hashes say: memory stays bounded. */
const MAX_CHUNK_PAGES = 16;

function hash32(label: string, key: string): number {
  return createHash("sha256").update(`${label}\n${key}`).digest().readUInt32BE(0);
}

/** One run of consecutive listed objects: a unit of work, written as one or more table pages. */
export interface TableChunk {
  /** SHA-256 (hex) of the indexer version, page target, root and every (key, ETag, size): what its record must name. */
  readonly id: string;
  readonly objects: readonly ListedObject[];
}

/**
 * Cuts a listing (in key order, as pages arrive) into chunks; call `flush` after the last page.
 *
 * @example
 * const cut = chunker("gameplay", 1000);
 * for await (const page of bucket.pages("gameplay/")) for (const c of cut.push(page)) work(c);
 * for (const c of cut.flush()) work(c);
 */
export function chunker(
  root: string,
  pageTarget: number,
): {
  push(objects: readonly ListedObject[]): TableChunk[];
  flush(): TableChunk[];
} {
  const below = Math.floor(2 ** 32 / pageTarget);
  let run: ListedObject[] = [];
  const close = (): TableChunk[] => {
    if (run.length === 0) return [];
    const h = createHash("sha256").update(`chunk v1\n${INDEX_FORMAT_VERSION}\n${pageTarget}\n${root}\n`);
    for (const o of run) h.update(`${o.key}\n${o.etag}\n${o.size}\n`);
    const chunk = { id: h.digest("hex"), objects: run };
    run = [];
    return [chunk];
  };
  return {
    push(objects) {
      const out: TableChunk[] = [];
      for (const o of objects) {
        if (run.length > 0 && (hash32("cut", o.key) < below || run.length >= MAX_CHUNK_PAGES * pageTarget))
          out.push(...close());
        run.push(o);
      }
      return out;
    },
    flush: close,
  };
}

/** The shard (0 to of - 1) that indexes a chunk. */
export function chunkShard(chunk: TableChunk, of: number): number {
  return hash32("shard", chunk.objects[0]!.key) % of;
}

/** The name of the j-th page of a chunk: content-derived, so a rerun writes the same page under the same name. */
export function chunkPageName(chunk: TableChunk, j: number): string {
  // Generation 0 never exists: no name the edge's publisher gives (`{generation}-{n}`) is ever one of these.
  const n = BigInt(`0x${createHash("sha256").update(`${chunk.id}\n${j}`).digest("hex").slice(0, 15)}`);
  return `0-${n}`;
}

/** What a shard stores once a chunk's pages are stored: the pages the publisher names. */
export const ChunkRecordV1 = z.object({
  version: z.literal(1),
  id: z.string(),
  count: z.number().int().positive(),
  pages: z.array(TablePageRefV1).min(1),
});
export type ChunkRecordV1 = z.infer<typeof ChunkRecordV1>;

/** What a shard stores when each of its chunks is recorded. */
export const ShardMarkV1 = z.object({
  version: z.literal(1),
  shard: z.number().int().nonnegative(),
  of: z.number().int().positive(),
  pageTarget: z.number().int().positive(),
  chunks: z.number().int().nonnegative(),
  objects: z.number().int().nonnegative(),
  finishedAt: z.number().int(),
});
export type ShardMarkV1 = z.infer<typeof ShardMarkV1>;

/** Where the sharded build keeps its records, beside the table it publishes. */
export const buildKeys = {
  /**
   * The record of the chunk that starts at `first` (named by the key's hash: any key fits): the
   * chunk recorded last there, whose ID says whether it is the chunk listed now or one it
   * replaces (then its entries are kept for the objects that did not change).
   */
  chunk: (root: string, first: string) =>
    `${tablePrefix(root)}build/chunks/${createHash("sha256").update(first).digest("hex")}.json`,
  shardsPrefix: (root: string) => `${tablePrefix(root)}build/shards/`,
  shard: (root: string, shard: number, of: number) => `${tablePrefix(root)}build/shards/${of}/${shard}.json`,
  /** The generation the last publish wrote and a digest of the pages it named. */
  published: (root: string) => `${tablePrefix(root)}build/published.json`,
};

/**
 * Parses `I/N` (`--shard`): I in [0, N), N ≥ 1.
 *
 * @example
 * parseShard("2/4"); // { shard: 2, of: 4 }
 */
export function parseShard(text: string): { shard: number; of: number } | undefined {
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(text);
  if (!m) return undefined;
  const shard = Number(m[1]);
  const of = Number(m[2]);
  return of >= 1 && shard < of ? { shard, of } : undefined;
}
