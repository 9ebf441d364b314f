/** `GET|HEAD /v1/fetch?url=<signed edge URL>`: the object's bytes with the edge's 200/206/304/416 semantics. */
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { contentRange, ifRangeHolds, parseRange, unsatisfiedRange } from "../../common/byte-range.js";
import { matchesWeak } from "../../common/entity-tags.js";
import { ReadPool, releaseRead } from "../../common/read-pool.js";
import { CacheArgumentError, RangeNotSatisfiableError } from "../errors.js";
import type { RangeCache } from "../range-cache.js";

/** Spans up to this size are read whole and sent in one write; longer ones stream block by block. */
const WHOLE_BYTES = 8 << 20;
/**
 * Response bodies used again once written: a fresh buffer per request costs page faults and, as
 * external memory, brings V8's next full collection closer with every request served
 * (bench/README.md). At most READ_POOL_IDLE_BYTES of them wait idle.
 */
const bodies = new ReadPool(4 * WHOLE_BYTES);

/** One value of a request header (the first, should a client repeat it). */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export async function handleFetch(
  cache: RangeCache,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const target = query.get("url");
  if (!target) throw new CacheArgumentError("Expected a url query parameter (a signed edge URL) but received none");
  const ifMatch = header(req, "if-match");
  const pin = await cache.object(target, ifMatch !== undefined ? { ifMatch } : {});
  const ifNoneMatch = header(req, "if-none-match");
  if (ifNoneMatch !== undefined && matchesWeak(ifNoneMatch, pin.etag)) {
    // The caller holds this version already (RFC 9110 §13.1.2, before any Range).
    res.statusCode = 304;
    res.setHeader("etag", pin.etag);
    res.end();
    return;
  }
  // The cache knows no Last-Modified, so only an entity tag in If-Range can hold.
  const rangeHeader = header(req, "range");
  // Range handling is defined for GET only (RFC 9110 §14.2): a HEAD gets the whole object's headers.
  const ranged = req.method !== "HEAD" && ifRangeHolds(header(req, "if-range"), pin);
  const range = ranged ? parseRange(rangeHeader, pin.size) : parseRange(null, pin.size);
  res.setHeader("accept-ranges", "bytes");
  res.setHeader("etag", pin.etag);
  res.setHeader("content-type", "application/octet-stream");
  if (range.kind === "unsatisfiable") {
    res.setHeader("content-range", unsatisfiedRange(pin.size));
    throw new RangeNotSatisfiableError(String(rangeHeader), pin.size);
  }
  const start = range.kind === "partial" ? range.start : 0;
  const length = range.kind === "partial" ? range.end - range.start + 1 : pin.size;
  if (range.kind === "partial") {
    res.statusCode = 206;
    res.setHeader("content-range", contentRange(range.start, range.end, pin.size));
  }
  res.setHeader("content-length", length);
  if (req.method === "HEAD" || length === 0) {
    res.end();
    return;
  }
  if (length <= WHOLE_BYTES) {
    // Read into one buffer (stored blocks straight from the slabs) and handed to the socket as is.
    const into = bodies.take(length);
    // Not handed back should the read fail: a read that lost a close race may still be filling it.
    const body = await cache.read(target, start, length, { etag: pin.etag, into });
    if (res.destroyed) return releaseRead(into);
    // 'close' comes after the last write completed or the socket was torn down: the bytes are no
    // longer the socket's then.
    res.once("close", () => releaseRead(into));
    res.end(body);
    return;
  }
  // Headers are sent once the first block is in hand, so a failure before then is still a JSON error.
  let sent = false;
  try {
    for await (const chunk of cache.stream(target, start, length, { etag: pin.etag })) {
      if (res.destroyed) return;
      sent = true;
      if (!res.write(chunk)) await Promise.race([once(res, "drain"), once(res, "close")]);
    }
    res.end();
  } catch (err) {
    if (!sent) throw err;
    // Mid-body the status is gone; cutting the response makes the client see a short body.
    res.destroy(err as Error);
  }
}
