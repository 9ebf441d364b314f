/**
 * The local data plane: `POST /v1/locate` answers where a span's bytes lie in the slab files,
 * under a lease; `DELETE /v1/lease/{id}` ends the lease.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { LocateRequest } from "../../common/schema/cache-locate.js";
import type { RangeCache } from "../range-cache.js";
import { readJson } from "./body.js";

const MAX_BODY = 64 << 10;
export const LEASE_PATH = "/v1/lease/";

export async function handleLocate(cache: RangeCache, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { url, etag, offset, length, leaseMs, release } = await readJson(
    req,
    LocateRequest,
    "a locate request {url, etag?, offset, length, leaseMs?, release?}",
    MAX_BODY,
  );
  for (const id of release ?? []) cache.releaseIfHeld(id);
  const located = await cache.locate(url, offset, length, {
    ...(etag !== undefined ? { etag } : {}),
    ...(leaseMs !== undefined ? { leaseMs } : {}),
  });
  if (res.destroyed) {
    // The asker is gone: nobody will read these slots or release them.
    cache.release(located.lease.id);
    return;
  }
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(located));
}

export function handleRelease(cache: RangeCache, res: ServerResponse, pathname: string): void {
  cache.release(decodeURIComponent(pathname.slice(LEASE_PATH.length)));
  res.statusCode = 204;
  res.end();
}
