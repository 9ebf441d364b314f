import { EcError } from "../common/errors.js";
import { OBJECT_ID_UNKNOWN } from "../common/schema/object-ids.js";

/** Base of every origin-cache error; `status` is what the HTTP layer answers with. */
export class CacheError extends EcError {
  override readonly status: number;
  constructor(code: string, message: string, status = 500, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "CacheError";
    this.status = status;
  }
}

/** A caller passed something malformed (bad option, bad URL, bad plan body). */
export class CacheArgumentError extends CacheError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_INVALID_ARGUMENT", message, 400, options);
    this.name = "CacheArgumentError";
  }
}

/** The URL's origin is not one of the configured upstreams: the cache is not an open proxy. */
export class UpstreamNotAllowedError extends CacheError {
  constructor(url: string, allowed: readonly string[]) {
    super(
      "ERR_UPSTREAM_NOT_ALLOWED",
      `Expected a URL under ${allowed.join(" or ")} but received ${JSON.stringify(redact(url))}`,
      403,
    );
    this.name = "UpstreamNotAllowedError";
  }
}

/** The object changed upstream while it was pinned; bytes of two versions are never mixed. */
export class EtagChangedError extends CacheError {
  /** The ETag the object was pinned to. */
  readonly pinned: string;
  /** The ETag upstream answered with; undefined: it answered 412. */
  readonly seen: string | undefined;
  constructor(key: string, pinned: string, seen: string | undefined, options?: { cause?: unknown }) {
    super(
      "ERR_ETAG_CHANGED",
      `Object ${key} changed upstream: pinned ETag ${pinned}, upstream now ${seen ?? "answers 412 Precondition Failed"}`,
      412,
      options,
    );
    this.name = "EtagChangedError";
    this.pinned = pinned;
    this.seen = seen;
  }
}

/** The requested range lies outside the object. */
export class RangeNotSatisfiableError extends CacheError {
  readonly size: number;
  constructor(range: string, size: number) {
    super("ERR_RANGE_NOT_SATISFIABLE", `Range ${range} is not satisfiable for an object of ${size} bytes`, 416);
    this.name = "RangeNotSatisfiableError";
    this.size = size;
  }
}

/**
 * The URL's `exp` has passed: refused by the cache itself, without asking upstream, whatever it
 * holds of the object. The same code and status as the edge's answer to such a URL.
 */
export class SignatureExpiredError extends CacheError {
  readonly exp: number;
  constructor(url: string, exp: number) {
    super(
      "ERR_SIGNATURE_EXPIRED",
      `Expected a URL that has not expired but ${redact(url)} expired at ${new Date(exp * 1000).toISOString()}; sign it again`,
      403,
    );
    this.name = "SignatureExpiredError";
    this.exp = exp;
  }
}

/** Upstream answered with a status that is final (4xx other than 412/416), or its answer broke the range contract. */
export class UpstreamStatusError extends CacheError {
  readonly upstreamStatus: number;
  constructor(url: string, upstreamStatus: number, detail: string) {
    // 401/403/404 pass through so the SDK sees an expired signature or a missing key as such.
    super(
      "ERR_UPSTREAM_STATUS",
      `Upstream answered ${upstreamStatus} for ${redact(url)}: ${detail}`,
      [401, 403, 404].includes(upstreamStatus) ? upstreamStatus : 502,
    );
    this.name = "UpstreamStatusError";
    this.upstreamStatus = upstreamStatus;
  }
}

/** Retries are spent: resets, 5xx, stalls or short bodies kept happening. */
export class UpstreamUnavailableError extends CacheError {
  constructor(url: string, attempts: number, options?: { cause?: unknown }) {
    super("ERR_UPSTREAM_UNAVAILABLE", `Upstream failed ${attempts} times for ${redact(url)}`, 502, options);
    this.name = "UpstreamUnavailableError";
  }
}

/** Upstream gave no ETag, so the cache cannot tell two versions apart and refuses to cache or serve. */
export class MissingEtagError extends CacheError {
  constructor(url: string) {
    super(
      "ERR_UPSTREAM_NO_ETAG",
      `Upstream gave no ETag for ${redact(url)}; the cache needs one to pin the object version`,
      502,
    );
    this.name = "MissingEtagError";
  }
}

/** `upstreamClient: "native"` where libcurl does not load (or the addon does not): the cache does not start. */
export class UpstreamClientUnavailableError extends CacheError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super(
      "ERR_UPSTREAM_CLIENT_UNAVAILABLE",
      `The native upstream client (upstreamClient "native") is unavailable: ${reason}. Install libcurl (Debian and Ubuntu: apt-get install libcurl4) or use upstreamClient "undici", the default`,
      500,
      options,
    );
    this.name = "UpstreamClientUnavailableError";
  }
}

/**
 * A failure of the native upstream client's transport (libcurl): a reset, refused or timed-out
 * exchange carries the code node's and undici's clients give the same failure (ECONNRESET,
 * UND_ERR_BODY_TIMEOUT, …), so it is retried as theirs; anything else (TLS) is ERR_UPSTREAM_TRANSPORT.
 */
export class UpstreamTransportError extends CacheError {
  constructor(code: string, message: string) {
    super(code, message, 502);
    this.name = "UpstreamTransportError";
  }
}

/** The cache was closed while a read was pending. */
export class CacheClosedError extends CacheError {
  constructor(options?: { cause?: unknown }) {
    super("ERR_CACHE_CLOSED", "The cache is closed", 503, options);
    this.name = "CacheClosedError";
  }
}

/** The span's blocks could not all be kept on disk (a full or leased-up store): the caller reads them with GET /v1/fetch. */
export class LocateUnavailableError extends CacheError {
  constructor(key: string, first: number, last: number) {
    super(
      "ERR_LOCATE_UNAVAILABLE",
      `Expected blocks ${first}..${last} of ${key} to be stored for a lease but some are not (the store is full or held by leases); read them with GET /v1/fetch`,
      503,
    );
    this.name = "LocateUnavailableError";
  }
}

/** The cache's directory holds files the cache did not make (no marker of its own): it is not taken, and nothing in it is touched. */
export class CacheDirError extends CacheError {
  constructor(dir: string, found: readonly string[]) {
    super(
      "ERR_CACHE_DIR_FOREIGN",
      `Expected an empty directory or one this cache made for dir but ${JSON.stringify(dir)} holds ${found
        .slice(0, 5)
        .map((f) => JSON.stringify(f))
        .join(", ")}${found.length > 5 ? ` and ${found.length - 5} more` : ""}; give the cache a directory of its own`,
      409,
    );
    this.name = "CacheDirError";
  }
}

/** A plan from one more client than the cache keeps plans for: the plan is a hint, reads go on without it. */
export class PlanLimitError extends CacheError {
  constructor(limit: string) {
    super("ERR_PLAN_LIMIT", `Expected a plan within the cache's cap of ${limit} but this one would pass it`, 429);
    this.name = "PlanLimitError";
  }
}

/** A locate's lease would pass a cap on leases (per client or in all): the caller reads with GET /v1/fetch. */
export class LeaseLimitError extends CacheError {
  constructor(limit: string, blocks: number) {
    super(
      "ERR_LEASE_LIMIT",
      `Expected a lease within the cache's cap of ${limit} but this one of ${blocks} blocks would pass it; release leases or read with GET /v1/fetch`,
      429,
    );
    this.name = "LeaseLimitError";
  }
}

/** DELETE /v1/lease/{id} of a lease that does not exist (released, expired, or never granted). */
export class LeaseNotFoundError extends CacheError {
  constructor(id: string) {
    super(
      "ERR_LEASE_NOT_FOUND",
      `Expected a held lease but received ${JSON.stringify(id.slice(0, 100))}, which is not (released, expired, or unknown)`,
      404,
    );
    this.name = "LeaseNotFoundError";
  }
}

/** Signed URLs carry their signature in the query; errors and logs never repeat it. */
export function redact(url: string): string {
  const q = url.indexOf("?");
  return q < 0 ? url : `${url.slice(0, q)}?…`;
}

/** A plan or batched locate names an object id the cache does not hold (never registered, dropped, or the cache restarted): register it and ask again. */
export class ObjectIdUnknownError extends CacheError {
  constructor(client: string, ids: readonly string[]) {
    super(
      OBJECT_ID_UNKNOWN,
      `Expected object ids that client ${client} registered but received unknown ${ids.slice(0, 8).join(", ")}${ids.length > 8 ? ` and ${ids.length - 8} more` : ""}; send the request again with its objects`,
      404,
    );
    this.name = "ObjectIdUnknownError";
  }
}
