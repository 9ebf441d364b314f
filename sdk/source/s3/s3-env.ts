/**
 * The environment variables an r2:// or s3:// source takes its defaults from. The source reads
 * no process.env itself: `resolveOptions` picks these once (pickS3Env) and the values are passed
 * down, so a direct caller decides what, if anything, comes from the environment.
 */
export const S3_ENV_NAMES = [
  // the bucket's location (s3-url.ts)
  "R2_ACCOUNT_ID",
  "AWS_ENDPOINT_URL_S3",
  "AWS_ENDPOINT_URL",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  // its access key (s3-credentials.ts)
  "R2_ACCESS_KEY_ID",
  "R2_SECRET_ACCESS_KEY",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  // where client-built indexes and local tables are kept (index-disk-cache.ts, s3-source.ts)
  "EC_INDEX_CACHE_DIR",
  "XDG_CACHE_HOME",
  "EC_LOCAL_TABLE_BYTES",
] as const;

export type S3EnvName = (typeof S3_ENV_NAMES)[number];
/** Those variables' values; an absent one is unset. */
export type S3Env = Readonly<Partial<Record<S3EnvName, string>>>;

/**
 * The variables of S3_ENV_NAMES that `env` sets, and no others.
 *
 * @example
 * pickS3Env(process.env); // { AWS_REGION: "eu-west-1" }
 */
export function pickS3Env(env: Readonly<Record<string, string | undefined>>): S3Env {
  const picked: Partial<Record<S3EnvName, string>> = {};
  for (const name of S3_ENV_NAMES) if (env[name] !== undefined) picked[name] = env[name];
  return Object.freeze(picked);
}
