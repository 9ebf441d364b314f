/**
 * The flags every command taking r2:// and s3:// URLs shares (`ec push`, `ec stream`, `ec bench`,
 * `ec inspect`): what they set in place of AWS_ENDPOINT_URL_S3 and AWS_REGION.
 */
import type { S3Options } from "../source/s3/index.js";

/** parseArgs options of the bucket flags. */
export const BUCKET_FLAGS = {
  "s3-endpoint": { type: "string" },
  region: { type: "string" },
  "path-style": { type: "boolean" },
} as const;

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
