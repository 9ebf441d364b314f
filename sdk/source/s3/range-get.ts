/**
 * One byte range of one object version over a presigned GET (straight to the bucket, or
 * through an origin-cache's /v1/fetch). The listed ETag is sent as If-Match and checked on
 * the answer, so bytes of two versions are never mixed even where the server ignores If-Match.
 */
import { request, type Dispatcher } from "undici";
import { parseContentRange } from "../../../common/byte-range.js";
import { retry, TransientError } from "../../../common/retry-policy.js";
import { isTransientStatus } from "../../../common/transient-errors.js";
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
  /** Attempts for 5xx, resets and short bodies; default 3. */
  readonly attempts?: number;
  readonly signal?: AbortSignal;
}

/** Weak and strong forms of one ETag compare equal: R2 and S3 send strong ones, proxies may weaken them. */
export function sameEtag(a: string, b: string): boolean {
  const strip = (e: string) => e.trim().replace(/^W\//, "").replace(/^"|"$/g, "");
  return strip(a) === strip(b);
}

/** The wait between attempts (common/retry-policy.ts); a presigned GET is retried a few times only. */
const RANGE_BACKOFF = { minDelayMs: 50, maxDelayMs: 1000 };

/** The S3 error code inside an XML error body, e.g. "AccessDenied". */
function xmlCode(body: string): { name?: string; message?: string; Region?: string } {
  const pick = (tag: string) => new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(body)?.[1];
  const name = pick("Code");
  const message = pick("Message");
  const region = pick("Region");
  return { ...(name ? { name } : {}), ...(message ? { message } : {}), ...(region ? { Region: region } : {}) };
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
  const attempts = options.attempts ?? 3;
  let made = 0;
  try {
    return await retry(
      (n) => {
        made = n + 1;
        return attemptRange(target, offset, length, context, options);
      },
      { ...RANGE_BACKOFF, retries: attempts - 1 },
      options.signal ? { signal: options.signal } : {},
    );
  } catch (err) {
    if (err instanceof S3SourceError) throw err;
    throw new S3SourceError(
      S3ErrorCode.REQUEST_FAILED,
      `Could not read ${length} bytes at ${offset} of ${JSON.stringify(context.key)} from ${context.endpoint} after ${made} attempt(s): ${(err as Error).message}`,
      { cause: err },
    );
  }
}

async function attemptRange(
  target: RangeTarget,
  offset: number,
  length: number,
  context: S3RequestContext,
  options: RangeGetOptions,
): Promise<Uint8Array> {
  const last = offset + length - 1;
  const res = await request(target.url, {
    method: "GET",
    headers: { range: `bytes=${offset}-${last}`, "if-match": target.etag },
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  let consumed = false;
  try {
    const status = res.statusCode;
    if (isTransientStatus(status)) throw new TransientError(`${context.endpoint} answered ${status}`);
    if (status === 412) throw objectChanged(context, "If-Match failed");
    if (status >= 300) {
      const body = await res.body.text();
      consumed = true;
      const parsed = xmlCode(body);
      const json = /"code"\s*:\s*"([^"]+)"/.exec(body)?.[1];
      if (json === "ERR_ETAG_CHANGED") throw objectChanged(context, "the origin-cache saw a new ETag");
      throw mapS3Error(
        {
          ...parsed,
          ...(parsed.name ? {} : { name: json ?? `HTTP ${status}` }),
          $metadata: { httpStatusCode: status },
        },
        context,
      );
    }
    const etag = res.headers.etag;
    const got = Array.isArray(etag) ? etag[0] : etag;
    if (got === undefined)
      throw new S3SourceError(
        S3ErrorCode.REQUEST_FAILED,
        `${context.endpoint} sent no ETag for ${JSON.stringify(context.key)}, so its version cannot be checked`,
      );
    if (!sameEtag(got, target.etag)) throw objectChanged(context, `ETag ${got}, listed ${target.etag}`);
    if (status === 206) {
      const raw = res.headers["content-range"];
      const cr = parseContentRange(Array.isArray(raw) ? raw[0] : raw);
      if (cr?.start !== offset || cr.end !== last)
        throw new TransientError(`Content-Range ${String(raw)} does not match bytes=${offset}-${last}`);
      if (cr.size !== undefined && cr.size !== target.size)
        throw objectChanged(context, `size ${cr.size}, listed ${target.size}`);
    } else if (!(status === 200 && offset === 0 && length === target.size)) {
      // A 200 to a partial range is the whole object: never download it to keep a slice.
      throw new S3SourceError(
        S3ErrorCode.REQUEST_FAILED,
        `${context.endpoint} ignored the Range header (status ${status}) for ${JSON.stringify(context.key)}`,
      );
    }
    const out = new Uint8Array(length);
    let filled = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (filled + chunk.length > length)
        throw new TransientError(`${context.endpoint} sent more than the ${length} bytes asked for`);
      out.set(chunk, filled);
      filled += chunk.length;
    }
    consumed = true;
    if (filled !== length) throw new TransientError(`short body: ${filled} of ${length} bytes`);
    return out;
  } finally {
    if (!consumed) {
      // Destroying an unread body emits an abort error that nobody else listens for.
      res.body.on("error", () => {});
      res.body.destroy();
    }
  }
}
