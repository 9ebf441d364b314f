/**
 * One byte range of one object version over a presigned GET (straight to the bucket, or
 * through an origin-cache's /v1/fetch), through the origin-cache's ETag-pinned ranged GET
 * (fetchRange): the listed ETag is sent as If-Match and checked on every answer, so bytes of two
 * versions are never mixed even where the server ignores If-Match, and a broken body resumes
 * from its first missing byte. What it throws is an S3SourceError a user can act on.
 */
import { getGlobalDispatcher, type Dispatcher } from "undici";
import { sameWeak } from "../../../common/entity-tags.js";
import { Limiter } from "../../../common/limiter.js";
import {
  EtagChangedError,
  fetchRange,
  MissingEtagError,
  UpstreamStatusError,
  UpstreamUnavailableError,
  type Pin,
} from "../../../origin-cache/index.js";
import { mapS3Error, objectChanged, S3ErrorCode, S3SourceError, type S3RequestContext } from "./s3-errors.js";

export interface RangeTarget {
  /** The URL to GET: a presigned object URL, or an origin-cache fetch URL wrapping one. */
  readonly url: string;
  /** The listed version's ETag, quoted as the listing gave it. */
  readonly etag: string;
  /** The listed size. */
  readonly size: number;
}

export interface RangeGetOptions {
  readonly dispatcher?: Dispatcher;
  /** Failed attempts for 5xx, resets and short bodies (one that moved bytes is not failed); default 3. */
  readonly attempts?: number;
  readonly signal?: AbortSignal;
}

/** The wait between attempts (common/retry-policy.ts); a presigned GET is retried a few times only. */
const RANGE_BACKOFF = { minDelayMs: 50, maxDelayMs: 1000 };

/** No cap on requests in flight here: the caller's dispatcher bounds its connections. */
const UNCAPPED = new Limiter(Number.MAX_SAFE_INTEGER);

/** The S3 error code inside an XML error body, e.g. "AccessDenied". */
function xmlCode(body: string): { name?: string; message?: string; Region?: string } {
  const pick = (tag: string) => new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(body)?.[1];
  const name = pick("Code");
  const message = pick("Message");
  const region = pick("Region");
  return { ...(name ? { name } : {}), ...(message ? { message } : {}), ...(region ? { Region: region } : {}) };
}

/** A refusal's S3 XML (or origin-cache JSON) error body as the S3SourceError it means. */
function refusal(context: S3RequestContext, status: number, body: string): Error {
  const parsed = xmlCode(body);
  const json = /"code"\s*:\s*"([^"]+)"/.exec(body)?.[1];
  if (json === "ERR_ETAG_CHANGED") return objectChanged(context, "the origin-cache saw a new ETag");
  return mapS3Error(
    { ...parsed, ...(parsed.name ? {} : { name: json ?? `HTTP ${status}` }), $metadata: { httpStatusCode: status } },
    context,
  );
}

/**
 * Reads exactly `length` bytes at `offset` of the listed version of an object.
 *
 * @example
 * const bytes = await rangeGet({ url: presigned, etag, size }, 0, 4096, context);
 */
export async function rangeGet(
  target: RangeTarget,
  offset: number,
  length: number,
  context: S3RequestContext,
  options: RangeGetOptions = {},
): Promise<Uint8Array> {
  if (
    !Number.isSafeInteger(offset) ||
    !Number.isSafeInteger(length) ||
    offset < 0 ||
    length < 0 ||
    offset + length > target.size
  ) {
    throw new S3SourceError(
      S3ErrorCode.REQUEST_FAILED,
      `Expected a range inside the ${target.size}-byte object ${JSON.stringify(context.key)} but received ${length} bytes at ${offset}`,
    );
  }
  if (length === 0) return new Uint8Array(0);
  const url = new URL(target.url);
  const pin: Pin = { key: url.pathname, etag: target.etag, size: target.size };
  let requests = 0;
  try {
    return await fetchRange(
      {
        dispatcher: options.dispatcher ?? getGlobalDispatcher(),
        limiter: UNCAPPED,
        retry: { ...RANGE_BACKOFF, retries: (options.attempts ?? 3) - 1 },
        onRequest: () => void requests++,
        requireEtag: true,
        refused: (status, body) => refusal(context, status, body),
      },
      url,
      pin,
      offset,
      offset + length,
      options.signal,
      undefined,
      // A buffer of its own, not a slice of Node's shared pool: callers may keep it.
      Buffer.allocUnsafeSlow(length),
    );
  } catch (err) {
    throw asS3Error(err, context, offset, length, requests);
  }
}

/** What fetchRange threw, as the S3SourceError it means for this read. */
function asS3Error(
  err: unknown,
  context: S3RequestContext,
  offset: number,
  length: number,
  requests: number,
): S3SourceError {
  if (err instanceof S3SourceError) return err;
  if (err instanceof EtagChangedError) {
    const detail =
      err.seen === undefined
        ? "If-Match failed"
        : sameWeak(err.seen, err.pinned)
          ? "its size is not the listed size"
          : `ETag ${err.seen}, listed ${err.pinned}`;
    return objectChanged(context, detail);
  }
  const key = JSON.stringify(context.key);
  if (err instanceof MissingEtagError)
    return new S3SourceError(
      S3ErrorCode.REQUEST_FAILED,
      `${context.endpoint} sent no ETag for ${key}, so its version cannot be checked`,
    );
  if (err instanceof UpstreamStatusError && err.upstreamStatus < 300)
    // A 200 to a partial range is the whole object: never download it to keep a slice.
    return new S3SourceError(
      S3ErrorCode.REQUEST_FAILED,
      `${context.endpoint} ignored the Range header (status ${err.upstreamStatus}) for ${key}`,
    );
  const last = err instanceof UpstreamUnavailableError ? err.cause : err;
  return new S3SourceError(
    S3ErrorCode.REQUEST_FAILED,
    `Could not read ${length} bytes at ${offset} of ${key} from ${context.endpoint} after ${requests} attempt(s): ${(last as Error)?.message}`,
    { cause: err },
  );
}
