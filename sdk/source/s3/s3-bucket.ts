/**
 * One bucket behind the S3 API (R2, AWS S3, any compatible server): listing with
 * ListObjectsV2 and presigned GETs. Nothing here reads object bytes.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { mapS3Error, type S3RequestContext } from "./s3-errors.js";
import type { BucketLocation, S3Credentials } from "./s3-url.js";

/** An object as ListObjectsV2 reports it. */
export interface ListedObject {
  readonly key: string;
  readonly size: number;
  /** Quoted, as the bucket sends it. */
  readonly etag: string;
  /** LastModified, in seconds since the epoch, where the bucket gives it. */
  readonly modified?: number;
}

/** ListObjectsV2's largest page. */
const PAGE_KEYS = 1000;
/** Presigned URLs live this long; one is reused until a minute before it expires. */
const PRESIGN_SECONDS = 3600;

/**
 * The S3 client settings every part of ec uses for a bucket. Checksums only when required:
 * R2 and many S3-compatible servers reject the SDK's default CRC trailers on some calls.
 *
 * @example
 * const client = new S3Client(s3ClientConfig(location, credentials));
 */
export function s3ClientConfig(location: BucketLocation, credentials: S3Credentials) {
  return {
    region: location.region,
    // A copy: the AWS SDK writes bookkeeping into the credentials object it is given.
    credentials: { ...credentials },
    forcePathStyle: location.forcePathStyle,
    requestChecksumCalculation: "WHEN_REQUIRED" as const,
    responseChecksumValidation: "WHEN_REQUIRED" as const,
    ...(location.endpoint === undefined ? {} : { endpoint: location.endpoint }),
  };
}

export class S3Bucket {
  readonly client: S3Client;
  readonly endpoint: string;
  private readonly presigned = new Map<string, { url: string; until: number }>();

  constructor(
    readonly location: BucketLocation,
    credentials: S3Credentials,
  ) {
    this.client = new S3Client(s3ClientConfig(location, credentials));
    this.endpoint = location.endpoint ?? `https://s3.${location.region}.amazonaws.com`;
  }

  /** Where a request about `key` (or the bucket) goes, for error messages. */
  context(action: string, key?: string): S3RequestContext {
    return {
      endpoint: this.endpoint,
      region: this.location.region,
      bucket: this.location.bucket,
      action,
      ...(key === undefined ? {} : { key }),
    };
  }

  /**
   * Every object under the prefix, one ListObjectsV2 page at a time, in key order. Zero-byte
   * "folder" markers (keys ending in "/") are left out.
   *
   * @example
   * for await (const page of bucket.pages()) console.log(page.length);
   */
  async *pages(prefix = this.location.prefix): AsyncGenerator<ListedObject[]> {
    let token: string | undefined;
    do {
      let out;
      try {
        out = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.location.bucket,
            Prefix: prefix,
            MaxKeys: PAGE_KEYS,
            ContinuationToken: token,
          }),
        );
      } catch (err) {
        throw mapS3Error(err, this.context("list"));
      }
      const page: ListedObject[] = [];
      for (const o of out.Contents ?? []) {
        if (o.Key === undefined || (o.Key.endsWith("/") && (o.Size ?? 0) === 0)) continue;
        page.push({
          key: o.Key,
          size: o.Size ?? 0,
          etag: o.ETag ?? "",
          ...(o.LastModified ? { modified: o.LastModified.getTime() / 1000 } : {}),
        });
      }
      yield page;
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  /** Every object under the prefix, all pages concatenated. */
  async list(prefix = this.location.prefix): Promise<ListedObject[]> {
    const all: ListedObject[] = [];
    for await (const page of this.pages(prefix)) all.push(...page);
    return all;
  }

  /**
   * A presigned GET URL of `key`. Range and If-Match stay unsigned, so one URL serves every
   * range of the object and an origin-cache can forward it as is.
   *
   * @example
   * const url = await bucket.presignGet("clips/a.mp4");
   */
  async presignGet(key: string, now = Date.now()): Promise<string> {
    const hit = this.presigned.get(key);
    if (hit && hit.until > now) return hit.url;
    let url: string;
    try {
      url = await getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.location.bucket, Key: key }), {
        expiresIn: PRESIGN_SECONDS,
      });
    } catch (err) {
      throw mapS3Error(err, this.context("presign", key));
    }
    // Unbounded growth would track the dataset's size; a full reset is cheap (signing is local).
    if (this.presigned.size >= 65_536) this.presigned.clear();
    this.presigned.set(key, { url, until: now + (PRESIGN_SECONDS - 60) * 1000 });
    return url;
  }

  destroy(): void {
    this.client.destroy();
  }
}
