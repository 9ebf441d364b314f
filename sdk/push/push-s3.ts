/**
 * Uploads a directory straight to an R2 or S3 bucket over the S3 API, multipart for large
 * files. No edge is involved. The library behind `ec push DIR r2://… | s3://…`.
 */
import { open as openFile } from "node:fs/promises";
import { extname } from "node:path";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from "@aws-sdk/client-s3";
import { InvalidOptionError } from "../errors.js";
import {
  mapS3Error,
  parseBucketUrl,
  pickS3Env,
  resolveCredentials,
  s3ClientConfig,
  type BucketLocation,
  type S3Options,
} from "../source/s3/index.js";
import { CONTENT_TYPES, runPush, type PushHooks, type PushRun } from "./run-push.js";

const MiB = 1 << 20;
/** S3's and R2's smallest part (but the last). */
const MIN_PART = 5 * MiB;
/** S3's and R2's most parts per upload. */
const MAX_PARTS = 10_000;

export interface BucketPushOptions extends PushHooks {
  readonly dir: string;
  /** r2://… or s3://… ; the path after the bucket is the key prefix. */
  readonly url: URL;
  readonly s3?: S3Options;
  /** Files in flight at once; default 4. */
  readonly concurrency?: number;
  /** Multipart part size in bytes (at least 5 MiB); files up to this size go in one PUT. Default 16 MiB. */
  readonly partSize?: number;
  readonly env?: NodeJS.ProcessEnv;
}

export interface BucketPushSummary {
  /** The bucket URL pushed to, e.g. "s3://videos/gameplay/". */
  readonly target: string;
  readonly files: number;
  readonly bytes: number;
  /** Files sent as multipart uploads. */
  readonly multipart: number;
  readonly seconds: number;
  readonly failed: number;
  readonly pushed: readonly { key: string; size: number; etag: string }[];
  readonly errors: readonly { key: string; code: string; message: string }[];
}

/** Parts of at least `partSize`, grown where a huge file would exceed 10,000 parts. */
function planParts(size: number, partSize: number): number {
  return Math.max(partSize, Math.ceil(size / MAX_PARTS / MiB) * MiB);
}

async function uploadFile(
  client: S3Client,
  location: BucketLocation,
  key: string,
  path: string,
  size: number,
  opts: BucketPushOptions,
): Promise<{ etag: string; multipart: boolean }> {
  const Bucket = location.bucket;
  const ContentType = CONTENT_TYPES[extname(path).toLowerCase()] ?? "application/octet-stream";
  const partSize = planParts(size, opts.partSize ?? 16 * MiB);
  const fh = await openFile(path, "r");
  const readPart = async (offset: number, length: number) => {
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
      if (bytesRead === 0) throw new Error(`${path} shrank while it was being uploaded`);
      got += bytesRead;
    }
    return buf;
  };
  try {
    if (size <= partSize) {
      const out = await client.send(
        new PutObjectCommand({ Bucket, Key: key, Body: await readPart(0, size), ContentLength: size, ContentType }),
      );
      opts.onProgress?.({ bytes: size });
      return { etag: out.ETag ?? "", multipart: false };
    }
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: key, ContentType }));
    try {
      const count = Math.ceil(size / partSize);
      const parts: CompletedPart[] = new Array(count);
      let next = 0;
      // Two parts in flight per file: memory stays at concurrency × 2 × partSize.
      await Promise.all(
        Array.from({ length: Math.min(2, count) }, async () => {
          while (next < count) {
            const n = next++;
            const offset = n * partSize;
            const length = Math.min(partSize, size - offset);
            const out = await client.send(
              new UploadPartCommand({
                Bucket,
                Key: key,
                UploadId,
                PartNumber: n + 1,
                Body: await readPart(offset, length),
                ContentLength: length,
              }),
            );
            parts[n] = { PartNumber: n + 1, ETag: out.ETag! };
            opts.onProgress?.({ bytes: length });
          }
        }),
      );
      const done = await client.send(
        new CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }),
      );
      return { etag: done.ETag ?? "", multipart: true };
    } catch (err) {
      // An abandoned upload keeps its parts (and their storage bill) until aborted.
      await client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId })).catch(() => {});
      throw err;
    }
  } finally {
    await fh.close();
  }
}

/**
 * Uploads every file under `dir` to the bucket under the URL's prefix, `concurrency` files at a
 * time, multipart above `partSize`. Keys are validated before the first byte is sent; a failed
 * file is reported in the summary and the rest go on.
 *
 * @example
 * const s = await pushToBucket({ dir: "videos", url: new URL("r2://0123…/datasets/gameplay") });
 */
export async function pushToBucket(opts: BucketPushOptions): Promise<BucketPushSummary> {
  const started = performance.now();
  const env = pickS3Env(opts.env ?? process.env);
  const location = parseBucketUrl(opts.url, opts.s3 ?? {}, env);
  if ((opts.partSize ?? 16 * MiB) < MIN_PART)
    throw new InvalidOptionError(`Expected a part size of at least 5 MiB but received ${opts.partSize} bytes`);
  const client = new S3Client(s3ClientConfig(location, resolveCredentials(location, opts.s3?.credentials, env)));
  let run: PushRun<{ key: string; size: number; etag: string; multipart: boolean }>;
  try {
    run = await runPush(
      opts.dir,
      (rel) => `${location.prefix}${rel}`,
      { ...opts, concurrency: opts.concurrency ?? 4 },
      async (job) => ({
        key: job.key,
        size: job.size,
        ...(await uploadFile(client, location, job.key, job.path, job.size, opts)),
      }),
      (err, job) => {
        const e = mapS3Error(err, {
          endpoint: location.endpoint ?? "AWS S3",
          region: location.region,
          bucket: location.bucket,
          key: job.key,
          action: "upload",
        });
        return { code: e.code, message: e.message };
      },
    );
  } finally {
    client.destroy();
  }
  const { errors } = run;
  const multipart = run.pushed.filter((p) => p.multipart).length;
  const pushed = run.pushed.map(({ key, size, etag }) => ({ key, size, etag }));
  return {
    target: `${location.scheme}://${location.bucket}/${location.prefix}`,
    files: pushed.length,
    bytes: pushed.reduce((n, f) => n + f.size, 0),
    multipart,
    seconds: (performance.now() - started) / 1000,
    failed: errors.length,
    pushed,
    errors,
  };
}
