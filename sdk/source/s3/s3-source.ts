/**
 * Direct-to-bucket mode: an r2:// or s3:// dataset read without the edge. The client does
 * the edge's work: it lists the prefix, builds each object's index from presigned range GETs
 * (never the whole object) and keeps the indexes on disk keyed by ETag.
 */
import { Agent } from "undici";
import { buildIndex, guessKind, type RangeReader } from "../../../common/media-index/index.js";
import type { IndexV1 } from "../../../common/schema/index.js";
import { shardsBySize } from "../local-dir.js";
import type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceStats } from "../source.js";
import { defaultIndexCacheDir, IndexDiskCache } from "./index-disk-cache.js";
import { rangeGet, type RangeTarget } from "./range-get.js";
import { S3Bucket } from "./s3-bucket.js";
import { resolveCredentials } from "./s3-credentials.js";
import { parseBucketUrl, parseS3Options, type S3Options } from "./s3-url.js";

export interface S3SourceOptions extends S3Options {
  /** origin-cache URL: reads go through its /v1/fetch (it must list the bucket's endpoint as an upstream). */
  cache?: string;
  /** Where client-built indexes are kept; default: defaultIndexCacheDir(). */
  indexCacheDir?: string;
  /** Bound of that directory in bytes; default 256 MiB. */
  indexCacheBytes?: number;
  /** Concurrent range GETs to the bucket; default 32. */
  connections?: number;
}

export class S3Source implements DatasetSource {
  private readonly agent: Agent;
  private readonly indexes: IndexDiskCache;
  private readonly scope: string;
  private bytesFetched = 0;
  private requests = 0;

  /** @internal use openS3Source */
  constructor(readonly bucket: S3Bucket, private readonly options: S3SourceOptions, env: NodeJS.ProcessEnv) {
    this.agent = new Agent({ connections: options.connections ?? 32, keepAliveTimeout: 30_000 });
    this.indexes = new IndexDiskCache(options.indexCacheDir ?? defaultIndexCacheDir(env), options.indexCacheBytes);
    this.scope = `${bucket.endpoint}\n${bucket.location.bucket}`;
  }

  async list(): Promise<DatasetListing> {
    const listed = await this.bucket.list();
    const objects: DatasetObject[] = listed.map((o) => ({ key: o.key, size: o.size, etag: o.etag, kind: guessKind(o.key) }));
    return { objects, shards: shardsBySize(objects) };
  }

  /** A RangeReader over the listed version of `object`; what buildIndex reads through. */
  reader(object: DatasetObject): RangeReader {
    return { size: object.size, read: (offset, length) => this.read(object, offset, length) };
  }

  async index(object: DatasetObject): Promise<IndexV1> {
    const id = IndexDiskCache.id(this.scope, object.key, object.etag);
    const cached = await this.indexes.get(id, object);
    if (cached) return cached;
    return this.indexes.put(id, await buildIndex(this.reader(object), { key: object.key, etag: object.etag }));
  }

  async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    const bytes = await rangeGet(await this.target(object), offset, length, this.bucket.context("read", object.key), { dispatcher: this.agent });
    this.requests++;
    this.bytesFetched += bytes.length;
    return bytes;
  }

  private async target(object: DatasetObject): Promise<RangeTarget> {
    const signed = await this.bucket.presignGet(object.key);
    const url = this.options.cache === undefined ? signed : `${this.options.cache.replace(/\/+$/, "")}/v1/fetch?url=${encodeURIComponent(signed)}`;
    return { url, etag: object.etag, size: object.size };
  }

  plan(ranges: readonly PlannedRange[]): void {
    if (this.options.cache === undefined || ranges.length === 0) return;
    // A hint: the stream is correct without it, so failures are ignored.
    void (async () => {
      const body = [];
      for (const r of ranges) body.push({ url: await this.bucket.presignGet(r.object.key), offset: r.offset, length: r.length });
      const res = await fetch(`${this.options.cache!.replace(/\/+$/, "")}/v1/plan`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ranges: body }),
      });
      await res.body?.cancel();
    })().catch(() => {});
  }

  stats(): SourceStats {
    // Without an origin-cache every range goes to the bucket; with one, the cache counts its own hits.
    return { bytesFetched: this.bytesFetched, cacheHits: 0, cacheMisses: this.requests };
  }

  /** Index cache counters and range requests made, for tests and `ec inspect`. */
  counters(): { indexHits: number; indexMisses: number; rangeRequests: number } {
    return { indexHits: this.indexes.hits, indexMisses: this.indexes.misses, rangeRequests: this.requests };
  }

  async close(): Promise<void> {
    this.bucket.destroy();
    await this.agent.close();
  }
}

/**
 * Opens an r2:// or s3:// dataset: validates options, resolves credentials (options, then
 * R2_* / AWS_* environment variables), and returns a DatasetSource. No request is made yet.
 *
 * @example
 * const source = await openS3Source(new URL("r2://0123456789abcdef0123456789abcdef/videos/gameplay"));
 * const { objects } = await source.list();
 */
export async function openS3Source(url: URL, options: S3SourceOptions = {}, env: NodeJS.ProcessEnv = process.env): Promise<S3Source> {
  const { credentials } = parseS3Options(options);
  const location = parseBucketUrl(url, options, env);
  return new S3Source(new S3Bucket(location, resolveCredentials(location, credentials, env)), options, env);
}
