/**
 * ETag pinning: the first touch of an object learns its ETag and size; every later range carries
 * `If-Match` with that ETag and its answer is checked, so a changed object surfaces as
 * ERR_ETAG_CHANGED and bytes of two versions never meet in one block or one read.
 */
import type { IncomingHttpHeaders } from "node:http";
import { parseContentRange } from "../../common/byte-range.js";
import { sameWeak } from "../../common/entity-tags.js";
import { isTransientStatus } from "../../common/transient-errors.js";
import { EtagChangedError, MissingEtagError, UpstreamStatusError } from "../errors.js";
import { TransientUpstreamError } from "./retry.js";

export interface Pin {
  /** Object key: the URL path without the query (signatures differ, the object does not). */
  readonly key: string;
  readonly etag: string;
  readonly size: number;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Learns (etag, size) from the answer to `Range: bytes=0-0`, which works for GET-only presigned URLs too. */
export function pinFromProbe(key: string, url: string, status: number, headers: IncomingHttpHeaders): Pin {
  if (isTransientStatus(status)) throw new TransientUpstreamError(`upstream answered ${status}`);
  const etag = header(headers, "etag");
  let size: number | undefined;
  if (status === 206 || status === 416) size = parseContentRange(header(headers, "content-range"))?.size;
  else if (status === 200) size = Number(header(headers, "content-length"));
  else throw new UpstreamStatusError(url, status, "expected 206 for a one-byte probe");
  if (size === undefined || !Number.isSafeInteger(size) || size < 0) {
    throw new UpstreamStatusError(
      url,
      status,
      `no object size in Content-Range ${JSON.stringify(header(headers, "content-range"))}`,
    );
  }
  if (!etag) throw new MissingEtagError(url);
  return { key, etag, size };
}

/**
 * Checks a range answer against the pin; throws ERR_ETAG_CHANGED on a different version (ETags
 * compared weakly: a proxy may weaken a strong one). `requireEtag`: a 200/206 without an ETag is
 * ERR_UPSTREAM_NO_ETAG, for upstreams whose answers cannot be trusted to honour If-Match.
 */
export function checkPinned(pin: Pin, status: number, headers: IncomingHttpHeaders, requireEtag = false): void {
  if (status === 412) throw new EtagChangedError(pin.key, pin.etag, header(headers, "etag"));
  const etag = header(headers, "etag");
  if (etag === undefined && requireEtag && (status === 200 || status === 206)) throw new MissingEtagError(pin.key);
  if (etag !== undefined && !sameWeak(etag, pin.etag)) throw new EtagChangedError(pin.key, pin.etag, etag);
  const size = parseContentRange(header(headers, "content-range"))?.size;
  if (status === 206 && size !== undefined && size !== pin.size) throw new EtagChangedError(pin.key, pin.etag, etag);
}

export function ifMatch(pin: Pin): Record<string, string> {
  return { "if-match": pin.etag };
}
