/** The cache as a local HTTP service: a thin router over the in-process RangeCache. */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describeReceived } from "../common/errors.js";
import { CacheArgumentError, CacheError } from "./errors.js";
import { createLogger } from "./log.js";
import type { RangeCacheOptions } from "./options.js";
import { ObjectIds } from "./core/object-ids.js";
import { createRangeCache, type RangeCache } from "./range-cache.js";
import { handleFetch } from "./routes/fetch.js";
import { handleLocate, handleRelease, handleReleaseClient, LEASE_PATH } from "./routes/locate.js";
import { handlePlan } from "./routes/plan.js";
import { handleMetrics, handleStats } from "./routes/stats.js";
import type { CacheStats } from "./schema.js";

export interface StartCacheOptions extends RangeCacheOptions {
  /** Where to listen; default 127.0.0.1 on a free port. Loopback unless said otherwise. */
  readonly listen?: { readonly host?: string; readonly port?: number };
  /** Object ids kept for plans and batched locates (common/schema/object-ids.ts); default OBJECT_IDS_MAX. */
  readonly objectIds?: number;
}

export interface CacheService {
  /** Base URL of the service, e.g. http://127.0.0.1:8788 */
  readonly url: string;
  /** The in-process cache behind the service. */
  readonly cache: RangeCache;
  stats(): CacheStats;
  close(): Promise<void>;
}

type Route = (
  cache: RangeCache,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
  ids: ObjectIds,
) => Promise<void> | void;

const routes = new Map<string, Route>([
  ["GET /v1/fetch", handleFetch],
  ["HEAD /v1/fetch", handleFetch],
  ["POST /v1/plan", (cache, req, res, _query, ids) => handlePlan(cache, req, res, ids)],
  ["POST /v1/locate", (cache, req, res, _query, ids) => handleLocate(cache, req, res, ids)],
  ["DELETE /v1/leases", (cache, _req, res, query) => handleReleaseClient(cache, res, query)],
  ["GET /v1/stats", (cache, _req, res) => handleStats(cache, res)],
  ["GET /metrics", (cache, _req, res) => handleMetrics(cache, res)],
  ["GET /v1/health", (_cache, _req, res) => void res.end('{"ok":true}')],
]);

/**
 * Starts the origin-cache service over a block store in `dir`.
 *
 * @example
 * const svc = await startCache({ upstreams: ["https://edge.example"], dir: "/nvme/ec", maxBytes: 200e9, listen: { port: 8788 } });
 * // GET `${svc.url}/v1/fetch?url=${encodeURIComponent(signedUrl)}` with a Range header
 * await svc.close();
 */
export async function startCache(opts: StartCacheOptions): Promise<CacheService> {
  const host = opts.listen?.host ?? "127.0.0.1";
  const port = opts.listen?.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new CacheArgumentError(
      `Expected a port from 0 to 65535 for listen.port but received ${describeReceived(port)}`,
    );
  }
  const log = opts.logger ?? createLogger(opts.logLevel ?? "info");
  const cache = await createRangeCache({ ...opts, logger: log });
  const ids = new ObjectIds(opts.objectIds);
  const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const u = URL.parse(req.url ?? "/", "http://local");
    const route: Route | undefined = !u
      ? () => {
          throw new CacheArgumentError(`Expected a request path but received ${describeReceived(req.url)}`);
        }
      : (routes.get(`${req.method} ${u.pathname}`) ??
        (req.method === "DELETE" && u.pathname.startsWith(LEASE_PATH)
          ? (c, _req, r) => handleRelease(c, r, u.pathname)
          : undefined));
    const fail = (err: unknown): void => {
      const known = err instanceof CacheError;
      if (!known) log.error({ err }, "request failed");
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const body = known ? err.toJSON() : { error: { code: "ERR_INTERNAL", message: "internal error" } };
      res.statusCode = known ? err.status : 500;
      res.setHeader("content-type", "application/json");
      // A route may have set the length of the bytes it meant to send; the error body has its own.
      res.removeHeader("content-length");
      res.end(JSON.stringify(body));
    };
    if (!route) return fail(new CacheError("ERR_NOT_FOUND", `No route for ${req.method} ${u?.pathname}`, 404));
    try {
      void Promise.resolve(route(cache, req, res, u?.searchParams ?? new URLSearchParams(), ids)).catch(fail);
    } catch (err) {
      fail(err);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === "IPv6" ? `[${addr.address}]` : addr.address}:${addr.port}`;
  log.info({ url, upstreams: opts.upstreams }, "origin-cache listening");
  return {
    url,
    cache,
    stats: () => cache.stats(),
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await cache.close();
    },
  };
}
