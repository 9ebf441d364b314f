import { SdkError, SdkErrorCode } from "../../errors.js";

/** Stable codes of the direct-to-bucket source (a part of SdkErrorCode); callers branch on these, never on messages. */
export const S3ErrorCode = {
  /** The dataset URL is no r2:// or s3:// URL we can read. */
  URL_INVALID: SdkErrorCode.S3UrlInvalid,
  /** A public r2.dev URL: it serves objects but cannot list them, so no dataset can be built from it. */
  PUBLIC_URL: SdkErrorCode.S3PublicUrl,
  /** No access key in the options or the environment. */
  CREDENTIALS_MISSING: SdkErrorCode.S3CredentialsMissing,
  /** The bucket does not know the access key, or the secret does not match it. */
  CREDENTIALS_INVALID: SdkErrorCode.S3CredentialsInvalid,
  /** The key is valid but may not do this (list, read) on this bucket. */
  ACCESS_DENIED: SdkErrorCode.S3AccessDenied,
  /** Requests were signed for a region the bucket is not in. */
  WRONG_REGION: SdkErrorCode.S3WrongRegion,
  BUCKET_NOT_FOUND: SdkErrorCode.S3BucketNotFound,
  OBJECT_NOT_FOUND: SdkErrorCode.S3ObjectNotFound,
  /** The object's ETag is no longer the listed one: it was overwritten since the listing (the edge source and the cache use the same code). */
  OBJECT_CHANGED: SdkErrorCode.EtagChanged,
  /** The endpoint answered something else (5xx, a bad range, no answer at all). */
  REQUEST_FAILED: SdkErrorCode.S3RequestFailed,
} as const;
export type S3ErrorCode = (typeof S3ErrorCode)[keyof typeof S3ErrorCode];

/** Every error of the direct-to-bucket source. */
export class S3SourceError extends SdkError {
  constructor(code: S3ErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "S3SourceError";
  }
}

/** Where a failed request went, for messages that tell the user what to change. */
export interface S3RequestContext {
  readonly endpoint: string;
  readonly region: string;
  readonly bucket: string;
  /** The object key, for reads. */
  readonly key?: string;
  /** What was being done: "list", "read", "upload". */
  readonly action: string;
}

interface ServiceErrorLike {
  name?: string;
  Code?: string;
  message?: string;
  Region?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

const where = (c: S3RequestContext) => `bucket ${JSON.stringify(c.bucket)} at ${c.endpoint}`;
const what = (c: S3RequestContext) =>
  c.key === undefined ? `${c.action} ${where(c)}` : `${c.action} ${JSON.stringify(c.key)} in ${where(c)}`;

/** The region S3 says the bucket is in, from its error body or x-amz-bucket-region. */
function expectedRegion(e: ServiceErrorLike): string | undefined {
  return e.Region ?? e.$response?.headers?.["x-amz-bucket-region"] ?? /expecting '([^']+)'/.exec(e.message ?? "")?.[1];
}

/** A code and a message that says what to change. */
type Mapped = readonly [S3ErrorCode, string];
type Mapper = (e: ServiceErrorLike, c: S3RequestContext) => Mapped;

const denied: Mapper = (_e, c) => [
  S3ErrorCode.ACCESS_DENIED,
  `Access denied to ${what(c)}: the access key lacks ${c.action === "list" ? "list (Object Read)" : c.action === "upload" ? "write (Object Write)" : "read (Object Read)"} permission on this bucket`,
];
const badKey: Mapper = (e, c) => [
  S3ErrorCode.CREDENTIALS_INVALID,
  `The credentials were rejected by ${c.endpoint} (${e.name}): check the access key id and secret (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or R2_ACCESS_KEY_ID/R2_SECRET_ACCESS_KEY)`,
];
const wrongRegion: Mapper = (e, c) => {
  const region = expectedRegion(e);
  return [
    S3ErrorCode.WRONG_REGION,
    `Requests to ${where(c)} were signed for region ${JSON.stringify(c.region)} but ${region === undefined ? "the bucket is elsewhere" : `the bucket is in ${JSON.stringify(region)}`}: pass region${region === undefined ? "" : ` "${region}"`} (or set AWS_REGION)${c.endpoint.includes("r2.cloudflarestorage.com") ? '; R2 takes "auto"' : ""}`,
  ];
};

/** S3 error codes (the `name` the AWS SDK gives its exceptions) a user meets, by cause. */
const byName = new Map<string, Mapper>([
  ["AccessDenied", denied],
  ["Forbidden", denied],
  ["AllAccessDisabled", denied],
  ["InvalidAccessKeyId", badKey],
  ["SignatureDoesNotMatch", badKey],
  ["InvalidToken", badKey],
  ["ExpiredToken", badKey],
  ["AuthorizationHeaderMalformed", (e, c) => (expectedRegion(e) !== undefined ? wrongRegion(e, c) : badKey(e, c))],
  ["AuthorizationQueryParametersError", (e, c) => (expectedRegion(e) !== undefined ? wrongRegion(e, c) : badKey(e, c))],
  ["PermanentRedirect", wrongRegion],
  ["InvalidRegionName", wrongRegion],
  ["IllegalLocationConstraintException", wrongRegion],
  [
    "NoSuchBucket",
    (_e, c) => [
      S3ErrorCode.BUCKET_NOT_FOUND,
      `No bucket ${JSON.stringify(c.bucket)} at ${c.endpoint}: check the bucket name${c.endpoint.includes("r2.cloudflarestorage.com") ? " and the account id" : " and the endpoint"}`,
    ],
  ],
  [
    "NoSuchKey",
    (_e, c) => [
      S3ErrorCode.OBJECT_NOT_FOUND,
      `No object ${JSON.stringify(c.key)} in ${where(c)}: it was deleted after the listing`,
    ],
  ],
  ["PreconditionFailed", (_e, c) => [S3ErrorCode.OBJECT_CHANGED, changedMessage(c, "its ETag no longer matches")]],
]);

/** The object at `key` is no longer the listed version. */
export function objectChanged(c: S3RequestContext, detail: string): S3SourceError {
  return new S3SourceError(S3ErrorCode.OBJECT_CHANGED, changedMessage(c, detail));
}

function changedMessage(c: S3RequestContext, detail: string): string {
  return `${JSON.stringify(c.key)} in ${where(c)} changed since it was listed (${detail}); list the dataset again`;
}

/**
 * Turns whatever the AWS SDK or a presigned GET threw into an S3SourceError with a code a
 * user can act on. Status-only errors (HEAD, empty bodies) fall back on the HTTP status.
 *
 * @example
 * try { await client.send(list) } catch (e) { throw mapS3Error(e, { endpoint, region, bucket, action: "list" }) }
 */
export function mapS3Error(err: unknown, context: S3RequestContext): S3SourceError {
  if (err instanceof S3SourceError) return err;
  const e = (err ?? {}) as ServiceErrorLike;
  const name = e.Code ?? e.name ?? "";
  const status = e.$metadata?.httpStatusCode;
  const mapper =
    byName.get(name) ??
    (status === 301 || status === 307
      ? wrongRegion
      : status === 403
        ? denied
        : status === 404
          ? byName.get(context.key === undefined ? "NoSuchBucket" : "NoSuchKey")
          : status === 412
            ? byName.get("PreconditionFailed")
            : undefined);
  if (mapper) {
    const [code, message] = mapper(e, context);
    return new S3SourceError(code, message, { cause: err });
  }
  const reason = err instanceof Error ? err.message : String(err);
  return new S3SourceError(
    S3ErrorCode.REQUEST_FAILED,
    `Could not ${what(context)}: ${name && name !== "Error" ? `${name}: ` : ""}${reason}`,
    { cause: err },
  );
}
