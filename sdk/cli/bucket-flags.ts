/**
 * The flags every command taking r2:// and s3:// URLs shares (`ec push`, `ec index`, `ec stream`,
 * `ec bench`, `ec inspect`): what they set in place of AWS_ENDPOINT_URL_S3 and AWS_REGION, how
 * their usage names them, and how such a URL is told apart and opened.
 */
import type { S3Options } from "../source/s3/index.js";

/** parseArgs options of the bucket flags. */
export const BUCKET_FLAGS = {
  "s3-endpoint": { type: "string" },
  region: { type: "string" },
  "path-style": { type: "boolean" },
} as const;

/** The bucket flags as each command's usage lists them. */
export const BUCKET_FLAGS_USAGE = "[--s3-endpoint URL] [--region R] [--path-style]";

/** True for the dataset URLs read straight from a bucket. */
export function isBucketUrl(url: string): boolean {
  return /^(r2|s3):\/\//i.test(url);
}

/**
 * The S3 options the bucket flags set; absent flags leave the environment's.
 *
 * @example
 * const { values } = parseArgs({ args, options: { ...BUCKET_FLAGS } });
 * const s3 = bucketOptions(values);
 */
export function bucketOptions(values: { "s3-endpoint"?: string; region?: string; "path-style"?: boolean }): S3Options {
  return {
    ...(values["s3-endpoint"] === undefined ? {} : { endpoint: values["s3-endpoint"] }),
    ...(values.region === undefined ? {} : { region: values.region }),
    ...(values["path-style"] === undefined ? {} : { forcePathStyle: values["path-style"] }),
  };
}

/**
 * The bucket source of an r2:// or s3:// URL: what `s3` leaves out comes from the environment
 * (AWS_ENDPOINT_URL_S3, R2_ACCESS_KEY_ID, …). The S3 client is loaded only here, when needed.
 *
 * @example
 * const source = await openBucketSource("s3://videos/gameplay", bucketOptions(values));
 */
export async function openBucketSource(url: string, s3: S3Options) {
  const { openS3Source, pickS3Env } = await import("../source/s3/index.js");
  return openS3Source(new URL(url), s3, pickS3Env(process.env));
}
