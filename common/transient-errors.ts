/**
 * The one list of failures worth another try, for every client in ec that retries: the
 * origin-cache's upstream pulls, the SDK's reads through a cache, its presigned S3 GETs.
 * A transient failure is one where the same request, sent again, may well succeed: the
 * connection broke or timed out, or the server said it is busy or failing for now.
 */

/** Error codes of Node's net/http2 layers and undici for a broken or timed-out exchange. */
export const TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_RES_CONTENT_LENGTH_MISMATCH",
  "UND_ERR_INFO",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

/** Every HTTP/2 session or stream failure (ERR_HTTP2_STREAM_ERROR, ERR_HTTP2_GOAWAY_SESSION, …). */
const HTTP2_PREFIX = "ERR_HTTP2_";

/** How far down a `cause` chain a transient code is looked for (a wrapped reset still counts). */
const CAUSE_DEPTH = 4;

/**
 * Whether `err`, or an error it was caused by, carries a transient code; `extra` adds codes a
 * caller also treats as transient (the SDK: ERR_UPSTREAM_UNAVAILABLE, the cache's own give-up).
 *
 * @example
 * hasTransientCode(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })); // true
 */
export function hasTransientCode(err: unknown, extra: ReadonlySet<string> = new Set()): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < CAUSE_DEPTH; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === "string" &&
      (TRANSIENT_ERROR_CODES.has(code) || code.startsWith(HTTP2_PREFIX) || extra.has(code))
    )
      return true;
  }
  return false;
}

/**
 * Whether an HTTP status says "try again later": 408, 429 or any 5xx.
 *
 * @example
 * isTransientStatus(503); // true
 * isTransientStatus(404); // false
 */
export function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}
