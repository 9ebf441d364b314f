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
  type LocateBatchResponse,
  LocateRequest,
  type LocateResponse,
  type LocateSpan,
} from "../../common/schema/cache-locate.js";
import { compactAnswer } from "../core/compact-runs.js";
import type { ObjectIds } from "../core/object-ids.js";
import { CacheArgumentError } from "../errors.js";
import { describeReceived } from "../../common/errors.js";
import { ANONYMOUS_CLIENT } from "../schema.js";
import type { RangeCache } from "../range-cache.js";
import { checkJson, readJson } from "./body.js";

/** A batch of signed URLs: LOCATE_MAX_SPANS of them at up to ~2 KiB each. */
const MAX_BODY = 1 << 20;
const SINGLE = "a locate request {url, etag?, offset, length, leaseMs?, release?}";
const BATCH =
  'a batched locate request {spans: [{url, etag?, offset, length, min?} | {object, offset, length, min?}], client?, objects?, waitMs?, leaseMs?, release?, form?: "compact"}';
export const LEASE_PATH = "/v1/lease/";

export async function handleLocate(
  cache: RangeCache,
  req: IncomingMessage,
  res: ServerResponse,
  ids: ObjectIds,
): Promise<void> {
  const json: unknown = await readJson(req, z.unknown(), SINGLE, MAX_BODY);
  const batch = typeof json === "object" && json !== null && "spans" in json;
  const body = batch ? checkJson(json, LocateBatchRequest, BATCH) : checkJson(json, LocateRequest, SINGLE);
  let located: LocateResponse | LocateBatchResponse;
  let compact = false;
  if ("spans" in body) {
    // Its releases count even when an unknown id refuses it: the client asks again without them.
    const leaseMs = releaseFirst(cache, body);
    const spans = ids.resolve<LocateSpan>(body.client ?? ANONYMOUS_CLIENT, body.objects, body.spans);
    // Granted to the named client, so that it can end them all when it closes.
    const lease = { ...leaseMs, owner: body.client };
    if (body.waitMs !== undefined) return streamLines(cache, spans, body.waitMs, lease, body.form === "compact", res);
    located = await cache.locateCached(spans, lease);
    compact = body.form === "compact";
  } else {
    const leaseMs = releaseFirst(cache, body);
    located = await cache.locate(body.url, body.offset, body.length, {
      ...(body.etag !== undefined ? { etag: body.etag } : {}),
      ...leaseMs,
    });
  }
  if (res.destroyed) {
    // The asker is gone: nobody will read these slots or release them.
    if (located.lease) cache.release(located.lease.id);
    return;
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(compact && "spans" in located ? compactAnswer(located) : located));
}

/** Ends the leases the request lets go of; its own lease's length, if it names one. */
function releaseFirst(
  cache: RangeCache,
  body: { readonly release?: readonly string[] | undefined; readonly leaseMs?: number | undefined },
): { leaseMs?: number } {
  for (const id of body.release ?? []) cache.releaseIfHeld(id);
  return body.leaseMs !== undefined ? { leaseMs: body.leaseMs } : {};
}

/** A long-polled batch's answer, one line per answer as the spans land; a line nobody reads ends its lease. */
async function streamLines(
  cache: RangeCache,
  spans: readonly LocateSpan[],
  waitMs: number,
  lease: { leaseMs?: number; owner?: string | undefined },
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
  await cache.locateLines(spans, { waitMs, gone, ...lease }, answer);
  if (!started) res.setHeader("content-type", LOCATE_LINES_TYPE);
  res.end();
}

/**
 * `DELETE /v1/leases?client=C`: ends every lease the cache's answers handed to client C (a client
 * closing: some lines of a batch it aborted may never have reached it). 200 `{"ended": n}`.
 */
export function handleReleaseClient(cache: RangeCache, res: ServerResponse, query: URLSearchParams): void {
  const client = query.get("client");
  if (!client)
    throw new CacheArgumentError(`Expected a client query parameter but received ${describeReceived(client)}`);
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ ended: cache.releaseOwned(client) }));
}

export function handleRelease(cache: RangeCache, res: ServerResponse, pathname: string): void {
  const raw = pathname.slice(LEASE_PATH.length);
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch (cause) {
    throw new CacheArgumentError(
      `Expected a lease id (percent-encoded UTF-8) but received ${JSON.stringify(raw.slice(0, 100))}`,
      { cause },
    );
  }
  cache.release(id);
  res.statusCode = 204;
  res.end();
}
