/** `GET|HEAD /v1/fetch?url=<signed edge URL>`: the object's bytes with the edge's 200/206/304/416 semantics. */
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { matchesWeak } from "../../common/entity-tags.js";
import { CacheArgumentError, RangeNotSatisfiableError } from "../errors.js";
import type { RangeCache } from "../range-cache.js";
import { parseRangeHeader } from "./range-header.js";

export async function handleFetch(cache: RangeCache, req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
  const target = query.get("url");
  if (!target) throw new CacheArgumentError("Expected a url query parameter (a signed edge URL) but received none");
  const ifMatch = req.headers["if-match"];
  const expect = ifMatch && ifMatch !== "*" ? ifMatch : undefined;
  const pin = await cache.object(target, expect ? { etag: expect } : {});
  const ifNoneMatch = req.headers["if-none-match"];
  if (ifNoneMatch !== undefined && matchesWeak(ifNoneMatch, pin.etag)) {
    // The caller holds this version already (RFC 9110 §13.1.2, before any Range).
    res.statusCode = 304;
    res.setHeader("etag", pin.etag);
    res.end();
    return;
  }
  const ifRange = req.headers["if-range"];
  const range = ifRange !== undefined && ifRange !== pin.etag ? { kind: "whole" as const } : parseRangeHeader(req.headers.range, pin.size);
  res.setHeader("accept-ranges", "bytes");
  res.setHeader("etag", pin.etag);
  res.setHeader("content-type", "application/octet-stream");
  if (range.kind === "unsatisfiable") {
    res.setHeader("content-range", `bytes */${pin.size}`);
    throw new RangeNotSatisfiableError(String(req.headers.range), pin.size);
  }
  const start = range.kind === "range" ? range.start : 0;
  const length = range.kind === "range" ? range.end - range.start + 1 : pin.size;
  if (range.kind === "range") {
    res.statusCode = 206;
    res.setHeader("content-range", `bytes ${start}-${start + length - 1}/${pin.size}`);
  }
  res.setHeader("content-length", length);
  if (req.method === "HEAD" || length === 0) {
    res.end();
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
