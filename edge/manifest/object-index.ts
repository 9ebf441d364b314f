import { indexCacheKey } from "../../common/dataset-table/table-keys.js";
import {
  buildIndex,
  encodeIndex,
  INDEX_MEMORY_BYTES,
  IndexErrorCode,
  MAX_INDEX_READS,
  MediaIndexError,
  type RangeReader,
} from "../../common/media-index/index.js";
import { NotFoundError, ObjectChangingError, PreconditionFailedError } from "../errors.js";

/** Content type of an encoded index (common/media-index codec, format version 1). */
export const INDEX_CONTENT_TYPE = "application/vnd.ec.index.v1";

/** Where an object's index is cached (common/dataset-table/table-keys.ts). */
export { indexCacheKey };

/** Range reads one index build may make (common/media-index: the SDK's bucket source uses the same). */
export { MAX_INDEX_READS };

const unquote = (etag: string) => etag.replace(/^W\//, "").replace(/^"(.*)"$/, "$1");

/** Range reads pinned to one etag: if the object changes mid-build, reads fail instead of mixing versions. */
function r2Reader(env: Env, key: string, meta: R2Object, count: { reads: number }): RangeReader {
  return {
    size: meta.size,
    async read(offset, length) {
      count.reads++;
      const got = await env.BUCKET.get(key, { range: { offset, length }, onlyIf: { etagMatches: meta.etag } });
      if (!got || !("body" in got)) throw new Error(`object ${JSON.stringify(key)} changed during indexing`);
      return new Uint8Array(await got.arrayBuffer());
    },
  };
}

export interface ObjectIndex {
  bytes: Uint8Array;
  /** The object's etag (quoted, as its ETag header) that the index describes. */
  etag: string;
  kind: string;
  cached: boolean;
  /** Range reads the build made (0 from the cache). */
  reads: number;
}

/** A build stopped at a read cap below MAX_INDEX_READS: nothing was cached, a full budget may succeed. */
export class IndexBudgetError extends Error {
  constructor(readonly key: string) {
    super(`indexing ${JSON.stringify(key)} needs more range reads than this invocation has left`);
    this.name = "IndexBudgetError";
  }
}

/**
 * The encoded index of one object: from the `_ec/index/` cache when this etag was indexed
 * before, else built with range reads and cached. Bad media is an error record (kind
 * "error"), never an exception; `expectEtag` refuses to answer for another version (412).
 *
 * @example
 * const { bytes } = await objectIndex(env, { key: "gameplay/a.mp4" });
 */
export async function objectIndex(
  env: Env,
  args: { key: string; expectEtag?: string | undefined; maxReads?: number },
): Promise<ObjectIndex> {
  const meta = await env.BUCKET.head(args.key);
  if (meta === null) throw new NotFoundError(`No object under key ${JSON.stringify(args.key)}`);
  if (args.expectEtag !== undefined && unquote(args.expectEtag) !== meta.etag) {
    throw new PreconditionFailedError(
      `The index was requested for ETag ${args.expectEtag} but ${JSON.stringify(args.key)} is now ${meta.httpEtag}`,
    );
  }
  const cacheKey = await indexCacheKey(meta.etag, args.key);
  const cached = await env.BUCKET.get(cacheKey);
  if (cached) {
    return {
      bytes: new Uint8Array(await cached.arrayBuffer()),
      etag: meta.httpEtag,
      kind: cached.customMetadata?.kind ?? "",
      cached: true,
      reads: 0,
    };
  }
  const maxReads = Math.min(args.maxReads ?? MAX_INDEX_READS, MAX_INDEX_READS);
  const count = { reads: 0 };
  let index;
  try {
    // Bounded memory whatever the object declares: past it an error record, cached like any other,
    // so neither the queue nor the next GET builds it again.
    index = await buildIndex(r2Reader(env, args.key, meta, count), {
      key: args.key,
      etag: meta.httpEtag,
      maxReads,
      memoryBytes: INDEX_MEMORY_BYTES,
    });
  } catch (cause) {
    if (cause instanceof MediaIndexError) throw new ObjectChangingError(args.key);
    throw cause;
  }
  if (index.error?.code === IndexErrorCode.TOO_LARGE && maxReads < MAX_INDEX_READS)
    throw new IndexBudgetError(args.key);
  const bytes = encodeIndex(index);
  await env.BUCKET.put(cacheKey, bytes, {
    httpMetadata: { contentType: INDEX_CONTENT_TYPE },
    customMetadata: { kind: index.kind, key: args.key },
  });
  return { bytes, etag: meta.httpEtag, kind: index.kind, cached: false, reads: count.reads };
}
