/** Direct-to-bucket mode: r2:// and s3:// dataset URLs, read without the edge. */
import type { DatasetSource, SourceOptions } from "../source.js";
import { openS3Source } from "./s3-source.js";

/**
 * The source-registry factory for "r2" and "s3". The bucket options (endpoint, region,
 * credentials, forcePathStyle) and the environment they default from are its slice of the
 * source options (`bucket`); reads go through the origin-cache when `cache` is set.
 *
 * @example
 * registerSource("r2", s3SourceFactory);
 */
export async function s3SourceFactory(url: URL, o: SourceOptions): Promise<DatasetSource> {
  const { env, ...bucket } = o.bucket;
  return openS3Source(
    url,
    {
      ...bucket,
      ...(o.cache === undefined ? {} : { cache: o.cache }),
      ...(o.cacheLocal === undefined ? {} : { cacheLocal: o.cacheLocal }),
      rank: o.rank,
      cacheBytes: o.cacheBytes,
      knownEdges: o.knownEdges,
      ...(o.edgeKeys === undefined ? {} : { edgeKeys: o.edgeKeys }),
    },
    env,
  );
}

export { IndexDiskCache, defaultIndexCacheDir } from "./index-disk-cache.js";
export { rangeGet, type RangeTarget } from "./range-get.js";
export { S3Bucket, s3ClientConfig, type ListedObject } from "./s3-bucket.js";
export { resolveCredentials } from "./s3-credentials.js";
export { pickS3Env, S3_ENV_NAMES, type S3Env } from "./s3-env.js";
export { mapS3Error, S3ErrorCode, S3SourceError, type S3RequestContext } from "./s3-errors.js";
export { bucketUpstream, openS3Source, S3Source, type S3SourceOptions } from "./s3-source.js";
export {
  assertNotPublicBucketUrl,
  isPublicBucketUrl,
  parseBucketUrl,
  parseS3Options,
  S3CredentialsSchema,
  S3OptionsSchema,
  type BucketLocation,
  type S3Credentials,
  type S3Options,
} from "./s3-url.js";
