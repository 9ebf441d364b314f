import { z } from "zod";
import { describeReceived } from "../../../common/errors.js";
import { InvalidOptionError } from "../../errors.js";
import type { S3Env } from "./s3-env.js";
import { S3ErrorCode, S3SourceError } from "./s3-errors.js";

const expected = (what: string, name: string) => (iss: { input?: unknown }) =>
  `Expected ${what} for ${name} but received ${describeReceived(iss.input)}`;

/** Access key of a bucket; sessionToken only for temporary (STS) keys. */
export const S3CredentialsSchema = z.object(
  {
    accessKeyId: z
      .string({ error: expected("a string", "credentials.accessKeyId") })
      .min(1, { error: expected("a non-empty string", "credentials.accessKeyId") }),
    secretAccessKey: z
      .string({ error: expected("a string", "credentials.secretAccessKey") })
      .min(1, { error: expected("a non-empty string", "credentials.secretAccessKey") }),
    sessionToken: z.string({ error: expected("a string", "credentials.sessionToken") }).optional(),
  },
  { error: expected("{ accessKeyId, secretAccessKey }", "credentials") },
);
export type S3Credentials = z.infer<typeof S3CredentialsSchema>;

/**
 * The direct-to-bucket options of `open()` and `ec push`, validated before any I/O. Every
 * one is optional: r2:// URLs need only credentials, and those may come from the environment.
 */
export const S3OptionsSchema = z.object({
  /** S3 API endpoint, e.g. https://ACCOUNT.r2.cloudflarestorage.com or http://127.0.0.1:9000; default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS S3. */
  endpoint: z.url({ protocol: /^https?$/, error: expected("an http(s) URL", "endpoint") }).optional(),
  /** Signing region; default: AWS_REGION, else "auto" for R2 and "us-east-1" elsewhere. */
  region: z
    .string({ error: expected("a string", "region") })
    .regex(/^[a-z0-9-]+$/, { error: expected('a region name such as "auto" or "eu-west-1"', "region") })
    .optional(),
  credentials: S3CredentialsSchema.optional(),
  /** Path-style addressing (endpoint/bucket/key); default: on for any endpoint but AWS's own. */
  forcePathStyle: z.boolean({ error: expected("a boolean", "forcePathStyle") }).optional(),
});
export type S3Options = z.input<typeof S3OptionsSchema>;

/** Where a dataset lives, with everything but the credentials resolved. */
export interface BucketLocation {
  readonly scheme: "r2" | "s3";
  readonly bucket: string;
  /** Key prefix of the dataset: "" or ending in "/". */
  readonly prefix: string;
  /** undefined: AWS S3's own endpoint for the region. */
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly forcePathStyle: boolean;
}

const R2_ACCOUNT = /^[0-9a-f]{32}$/i;
const BUCKET_NAME = /^[a-z0-9][a-z0-9.\-_]{1,254}$/i;

/** A public r2.dev URL (or an r2.dev endpoint): objects can be fetched, but nothing can be listed. */
export function isPublicBucketUrl(url: string | URL): boolean {
  const host = (
    typeof url === "string" ? (URL.canParse(url) ? new URL(url).hostname : "") : url.hostname
  ).toLowerCase();
  return host === "r2.dev" || host.endsWith(".r2.dev");
}

/**
 * Throws ERR_S3_PUBLIC_URL for a public r2.dev URL, which the http(s) source would otherwise
 * treat as an edge and fail on with a confusing 404.
 *
 * @example
 * assertNotPublicBucketUrl(new URL("https://pub-0123.r2.dev/clips")); // throws, says to use r2://
 */
export function assertNotPublicBucketUrl(url: URL): void {
  if (!isPublicBucketUrl(url)) return;
  throw new S3SourceError(
    S3ErrorCode.PUBLIC_URL,
    `${url.href} is a public r2.dev URL: it serves single objects but cannot list a prefix, so it cannot be a dataset. ` +
      "Use r2://ACCOUNT_ID/BUCKET/PREFIX with an R2 API token (R2_ACCESS_KEY_ID, R2_SECRET_ACCESS_KEY), or the edge's https://EDGE/v1/datasets/PREFIX",
  );
}

function invalid(url: URL | string, why: string): S3SourceError {
  return new S3SourceError(S3ErrorCode.URL_INVALID, `Expected ${why} but received ${JSON.stringify(String(url))}`);
}

function normalizePrefix(path: string): string {
  const trimmed = path.replace(/^\/+/, "");
  return trimmed === "" || trimmed.endsWith("/") ? trimmed : `${trimmed}/`;
}

/**
 * Resolves an r2:// or s3:// dataset URL plus options and environment into endpoint, region,
 * bucket and prefix; `env` holds the variables picked by resolveOptions (none by default). `r2://ACCOUNT_ID/BUCKET/PREFIX` uses https://ACCOUNT_ID.r2.cloudflarestorage.com
 * and region "auto"; `r2://BUCKET/PREFIX` takes the account from R2_ACCOUNT_ID.
 *
 * @example
 * parseBucketUrl(new URL("r2://0123456789abcdef0123456789abcdef/videos/gameplay"));
 * // { scheme: "r2", bucket: "videos", prefix: "gameplay/", endpoint: "https://0123…r2.cloudflarestorage.com", region: "auto", … }
 */
export function parseBucketUrl(url: URL, options: S3Options = {}, env: S3Env = {}): BucketLocation {
  const o = parseS3Options(options);
  if (o.endpoint !== undefined) assertNotPublicBucketUrl(new URL(o.endpoint));
  const host = decodeURIComponent(url.host);
  const segments = url.pathname
    .split("/")
    .filter((s) => s !== "")
    .map(decodeURIComponent);
  if (url.protocol === "r2:") {
    let account: string | undefined;
    let bucket: string | undefined;
    if (R2_ACCOUNT.test(host)) [account, bucket] = [host.toLowerCase(), segments.shift()];
    else [account, bucket] = [env.R2_ACCOUNT_ID, host];
    if (isPublicBucketUrl(`https://${host}`)) assertNotPublicBucketUrl(new URL(`https://${host}`));
    if (account === undefined || account === "" || !R2_ACCOUNT.test(account)) {
      throw invalid(
        url,
        "r2://ACCOUNT_ID/BUCKET/PREFIX with a 32-hex-digit account id (or R2_ACCOUNT_ID set and r2://BUCKET/PREFIX)",
      );
    }
    if (bucket === undefined || !BUCKET_NAME.test(bucket))
      throw invalid(url, "r2://ACCOUNT_ID/BUCKET/PREFIX with a bucket name");
    return {
      scheme: "r2",
      bucket,
      prefix: normalizePrefix(segments.join("/")),
      endpoint: o.endpoint ?? `https://${account}.r2.cloudflarestorage.com`,
      region: o.region ?? "auto",
      forcePathStyle: o.forcePathStyle ?? true,
    };
  }
  if (url.protocol === "s3:") {
    if (!BUCKET_NAME.test(host)) throw invalid(url, "s3://BUCKET/PREFIX with a bucket name");
    const endpoint = o.endpoint ?? (env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined);
    if (endpoint !== undefined && !URL.canParse(endpoint))
      throw invalid(endpoint, "an http(s) URL in AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL");
    if (endpoint !== undefined) assertNotPublicBucketUrl(new URL(endpoint));
    const r2 = endpoint?.includes(".r2.cloudflarestorage.com") ?? false;
    return {
      scheme: "s3",
      bucket: host,
      prefix: normalizePrefix(segments.join("/")),
      endpoint,
      region: o.region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || (r2 ? "auto" : "us-east-1")),
      forcePathStyle:
        o.forcePathStyle ?? (endpoint !== undefined && !new URL(endpoint).hostname.endsWith(".amazonaws.com")),
    };
  }
  throw invalid(url, "an r2:// or s3:// URL");
}

/** Validates the direct-to-bucket options, with the SDK's "Expected … but received …" messages. */
export function parseS3Options(options: unknown): z.output<typeof S3OptionsSchema> {
  const parsed = S3OptionsSchema.safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  throw new InvalidOptionError(parsed.error.issues[0]!.message);
}
