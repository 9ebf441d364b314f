import { unsatisfiedRange } from "../common/byte-range.js";
import { EcError } from "../common/errors.js";

/** HTTP statuses the edge answers errors with. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 411 | 412 | 413 | 416 | 500 | 503;

/**
 * Base of every edge error: a stable `code`, the HTTP `status` it maps to, and any headers
 * the status requires (WWW-Authenticate, Content-Range). `app.onError` renders it as JSON.
 */
export class EdgeError extends EcError {
  override readonly status: ErrorStatus;
  readonly headers: Record<string, string>;
  constructor(
    code: string,
    status: ErrorStatus,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(code, message, options);
    this.name = "EdgeError";
    this.status = status;
    this.headers = options?.headers ?? {};
  }
}

/** 400: the request is malformed (bad query value, body shorter than declared, ...). */
export class BadRequestError extends EdgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_BAD_REQUEST", 400, message, options);
    this.name = "BadRequestError";
  }
}

/** 400: the object key breaks the rules of common/keys.ts. */
export class InvalidKeyError extends EdgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_INVALID_KEY", 400, message, options);
    this.name = "InvalidKeyError";
  }
}

/** 401: no bearer token, or one that is not in EC_API_TOKENS. */
export class UnauthorizedError extends EdgeError {
  constructor(message = "A valid bearer token is required") {
    super("ERR_UNAUTHORIZED", 401, message, { headers: { "WWW-Authenticate": 'Bearer realm="ec"' } });
    this.name = "UnauthorizedError";
  }
}

/** 403: the signed URL's signature is missing, malformed or does not match this route and key. */
export class SignatureInvalidError extends EdgeError {
  constructor(message = "The URL signature is missing or invalid") {
    super("ERR_SIGNATURE_INVALID", 403, message);
    this.name = "SignatureInvalidError";
  }
}

/** 403: the signature is genuine but its expiry has passed; the holder should ask for a new URL. */
export class SignatureExpiredError extends EdgeError {
  constructor(exp: number) {
    super("ERR_SIGNATURE_EXPIRED", 403, `The signed URL expired at ${new Date(exp * 1000).toISOString()}`);
    this.name = "SignatureExpiredError";
  }
}

/**
 * 403: a genuine signature whose expiry lies further ahead than the edge signs
 * (EC_URL_MAX_TTL_SECONDS): a URL made with a leaked key, or by a signer that ignores the bound.
 */
export class SignatureLifetimeError extends EdgeError {
  constructor(maxSeconds: number) {
    super(
      "ERR_SIGNATURE_LIFETIME",
      403,
      `Expected a signed URL valid for at most ${maxSeconds} s from now but its exp lies further ahead`,
    );
    this.name = "SignatureLifetimeError";
  }
}

/** 404: no object under that key, or no such route. */
export class NotFoundError extends EdgeError {
  constructor(message = "Not found") {
    super("ERR_NOT_FOUND", 404, message);
    this.name = "NotFoundError";
  }
}

/** 411: R2 needs the size of a streamed upload up front. */
export class LengthRequiredError extends EdgeError {
  constructor() {
    super("ERR_LENGTH_REQUIRED", 411, "PUT needs a Content-Length header (R2 stores streams of known length only)");
    this.name = "LengthRequiredError";
  }
}

/** 412: If-Match or If-Unmodified-Since failed. */
export class PreconditionFailedError extends EdgeError {
  constructor(message: string) {
    super("ERR_PRECONDITION_FAILED", 412, message);
    this.name = "PreconditionFailedError";
  }
}

/** 413: larger than the route takes (one R2 put for objects; bigger ones go through the S3 multipart API). */
export class PayloadTooLargeError extends EdgeError {
  /** `received`: the body's Content-Length, or undefined for a body without one that ran past `limit`. */
  constructor(limit: number, received: number | undefined) {
    super(
      "ERR_PAYLOAD_TOO_LARGE",
      413,
      `Expected a body of at most ${limit} bytes but received ${received === undefined ? "more" : `Content-Length ${received}`}`,
    );
    this.name = "PayloadTooLargeError";
  }
}

/** 416: no byte of the requested range exists; `Content-Range: bytes *\/size` says how big it is. */
export class RangeNotSatisfiableError extends EdgeError {
  constructor(range: string, size: number) {
    super(
      "ERR_RANGE_NOT_SATISFIABLE",
      416,
      `Range ${JSON.stringify(range)} selects no byte of an object of ${size} bytes`,
      {
        headers: { "Content-Range": unsatisfiedRange(size) },
      },
    );
    this.name = "RangeNotSatisfiableError";
  }
}

/** 503: the object kept changing while it was being read; a retry will likely succeed. */
export class ObjectChangingError extends EdgeError {
  constructor(key: string) {
    super("ERR_OBJECT_CHANGING", 503, `Object ${JSON.stringify(key)} changed while it was being read; retry`, {
      headers: { "Retry-After": "1" },
    });
    this.name = "ObjectChangingError";
  }
}

/** 500 body: says nothing about what failed, so nothing leaks. */
export class InternalError extends EdgeError {
  constructor(cause?: unknown) {
    super("ERR_INTERNAL", 500, "Internal error", { cause });
    this.name = "InternalError";
  }
}
