/**
 * The local data plane: `POST /v1/locate` answers where a span's bytes lie in the slab files,
 * under a lease (or, given `spans`, where each stored one of many spans lies, under one lease; with
 * `waitMs` too, each span as it is stored, one line of JSON at a time); `DELETE /v1/lease/{id}`
 * ends the lease.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import {
  LOCATE_LINES_TYPE,
  type LocateBatchLine,
  LocateBatchRequest,
  LocateRequest,
} from "../../common/schema/cache-locate.js";
import { compactAnswer } from "../core/compact-runs.js";
import type { RangeCache } from "../range-cache.js";
import { checkJson, readJson } from "./body.js";

/** A batch of signed URLs: LOCATE_MAX_SPANS of them at up to ~2 KiB each. */
const MAX_BODY = 1 << 20;
const SINGLE = "a locate request {url, etag?, offset, length, leaseMs?, release?}";
const BATCH =
  'a batched locate request {spans: [{url, etag?, offset, length, min?}], waitMs?, leaseMs?, release?, form?: "compact"}';
export const LEASE_PATH = "/v1/lease/";

export async function handleLocate(cache: RangeCache, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const json: unknown = await readJson(req, z.unknown(), SINGLE, MAX_BODY);
  const body =
    typeof json === "object" && json !== null && "spans" in json
      ? checkJson(json, LocateBatchRequest, BATCH)
      : checkJson(json, LocateRequest, SINGLE);
  for (const id of body.release ?? []) cache.releaseIfHeld(id);
  const leaseMs = body.leaseMs !== undefined ? { leaseMs: body.leaseMs } : {};
  const compact = "spans" in body && body.form === "compact";
  if ("spans" in body && body.waitMs !== undefined)
    return streamLines(cache, body.spans, body.waitMs, leaseMs, compact, res);
  const located =
    "spans" in body
      ? await cache.locateCached(body.spans, leaseMs)
      : await cache.locate(body.url, body.offset, body.length, {
          ...(body.etag !== undefined ? { etag: body.etag } : {}),
          ...leaseMs,
        });
  if (res.destroyed) {
    // The asker is gone: nobody will read these slots or release them.
    if (located.lease) cache.release(located.lease.id);
    return;
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(compact && "spans" in located ? compactAnswer(located) : located));
}

/** A long-polled batch's answer, one line per answer as the spans land; a line nobody reads ends its lease. */
async function streamLines(
  cache: RangeCache,
  spans: LocateBatchRequest["spans"],
  waitMs: number,
  leaseMs: { leaseMs?: number },
  compact: boolean,
  res: ServerResponse,
): Promise<void> {
  const gone = (): boolean => res.destroyed || res.writableEnded;
  let started = false;
  const answer = (line: LocateBatchLine): void => {
    if (gone()) {
      if (line.lease) cache.releaseIfHeld(line.lease.id);
      return;
    }
    if (!started) {
      started = true;
      res.setHeader("content-type", LOCATE_LINES_TYPE);
    }
    res.write(`${JSON.stringify(compact ? compactAnswer(line) : line)}\n`);
  };
  // The answer starts with its first line (an error before it is an ordinary error answer).
  await cache.locateLines(spans, { waitMs, gone, ...leaseMs }, answer);
  if (!started) res.setHeader("content-type", LOCATE_LINES_TYPE);
  res.end();
}

export function handleRelease(cache: RangeCache, res: ServerResponse, pathname: string): void {
  cache.release(decodeURIComponent(pathname.slice(LEASE_PATH.length)));
  res.statusCode = 204;
  res.end();
}
