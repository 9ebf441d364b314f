/**
 * How an edge source reads bytes: through an origin-cache service (the `cache` option, shared by
 * the ranks of a host) or an in-process cache over a private temp directory.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
// The cache itself (its store, upstream and logger: a fifth of a second of module loading on a
// loaded core) only where it runs in-process; a client of a cache service needs its stats' shape.
import type { RangeCache } from "../../origin-cache/index.js";
import { CacheStats } from "../../common/schema/cache-stats.js";
import { ErrorBody } from "../../common/errors.js";
import { isTransient, RetryWindow } from "../../common/retry-policy.js";
import { relayedCode, SdkError, SdkErrorCode, type RelayedErrorCode } from "../errors.js";
import { LocalPlane, wantsLocalPlane } from "./local-plane.js";
import { ObjectIdClient } from "./object-ids.js";
import { ReadPool, releaseRead } from "../../common/read-pool.js";
import type { SourceStats } from "./source.js";

export interface PlanRange {
  readonly url: string;
  readonly etag?: string;
  readonly offset: number;
  readonly length: number;
  readonly size?: number;
}

/** An object to pin: its signed URL and, where known, the ETag reads will ask for. */
export interface PinObject {
  readonly url: string;
  readonly etag?: string;
}

/** What an edge source needs from a cache. */
export interface ByteCache {
  read(url: string, offset: number, length: number, etag: string | undefined): Promise<Uint8Array>;
  /** Ranges wanted next, soonest first; `etag` as for read, `size` the object's where known. */
  plan(ranges: readonly PlanRange[]): void;
  /**
   * Objects whose ranges are about to be planned (their indexes are on their way): the cache
   * learns each one's version now (one probe upstream, nothing pulled), so the plan's first
   * pulls start at once instead of one round trip later. A hint: its failures are dropped.
   */
  pin?(objects: readonly PinObject[]): void;
  stats(): SourceStats;
  /** Brings stats() up to date where they live in another process. */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/**
 * How long reads wait out an outage: an origin-cache that refuses or drops connections (killed
 * and restarted: crash, upgrade), or an upstream the cache gave up on after its own retries (an
 * edge restarting or redeployed). Both come back within seconds, and the clips in flight should
 * wait for them rather than fail.
 */
const OUTAGE_MS = 20_000;

/** The cache's own "upstream gave up after its retries" is an outage too (see OUTAGE_MS). */
const OUTAGE_CODES: ReadonlySet<string> = new Set(["ERR_UPSTREAM_UNAVAILABLE"]);

/**
 * One outage window shared by every read of a cache (common/retry-policy.ts): reads retry
 * transient failures with backoff while the outage is younger than OUTAGE_MS, and once it is
 * older they fail at once (typed) instead of each waiting a window of its own. Any success ends
 * the outage.
 */
export class OutageWindow extends RetryWindow {
  constructor(windowMs = OUTAGE_MS) {
    super(windowMs, { transient: (err) => isTransient(err, OUTAGE_CODES) });
  }
}

/**
 * Blocks small enough that a random clip pulls little more than its GOP bytes (≈ its span + one
 * block). Consecutive missing blocks go upstream as one request, so small blocks cost no extra
 * requests; the store's cost is a 4 KiB header per block (a 256 MiB cache holds ~13 Ki blocks).
 */
const IN_PROCESS_BLOCK = 16 << 10;

/**
 * The counters a client's stats() reports, of the whole CacheStats: the stats are refreshed every
 * second, and the rest of the shape (latency percentiles, HTTP versions, the plan) is parsed for nothing.
 */
const ClientCounters = CacheStats.pick({ bytesFromUpstream: true, hits: true, misses: true });

/**
 * @example
 * const cache = await inProcessCache("http://127.0.0.1:8787", 256 << 20);
 */
export async function inProcessCache(edge: string, maxBytes: number): Promise<ByteCache> {
  const dir = await mkdtemp(join(tmpdir(), "ec-cache-"));
  let cache: RangeCache;
  try {
    const { createRangeCache } = await import("../../origin-cache/index.js");
    cache = await createRangeCache({
      upstreams: [edge],
      dir,
      maxBytes,
      blockSize: IN_PROCESS_BLOCK,
      logLevel: "silent",
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const outage = new OutageWindow();
  const pool = new ReadPool();
  return {
    read: (url, offset, length, etag) =>
      outage.run(async () => {
        // Read into pooled memory, which the pipeline hands back (releaseRead) once decoded; a
        // failed read keeps its buffer, as parts of it may still be being written.
        const into = pool.take(length);
        await cache.read(url, offset, length, etag === undefined ? { into } : { etag, into });
        return into;
      }),
    plan: (ranges) => void cache.plan(ranges),
    pin: (objects) => {
      for (const o of objects)
        void cache.object(o.url, o.etag === undefined ? {} : { ifMatch: o.etag }).catch(() => {});
    },
    stats: () => {
      const s = cache.stats();
      return { bytesFetched: s.bytesFromUpstream, cacheHits: s.hits, cacheMisses: s.misses };
    },
    refresh: async () => {},
    close: async () => {
      await cache.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RemoteCacheOptions {
  /**
   * Read cache hits from the cache's slab files directly (POST /v1/locate, then pread) instead of
   * over HTTP; only for a loopback cache URL. Default: on (`open()` passes false for `EC_CACHE_LOCAL=0`).
   */
  readonly local?: boolean;
}

/**
 * A client of an origin-cache service (GET /v1/fetch, POST /v1/plan, GET /v1/stats). On a
 * loopback cache URL it first asks where the bytes lie in the cache's slab files and reads them
 * itself (see local-plane.ts), falling back to GET /v1/fetch on any failure of that. Its
 * counters are the service's, shared by every client of it, as deltas since this client opened.
 * Its plans carry a client id of its own (host, pid, rank, random), so the ranks sharing the
 * service each keep their plan instead of replacing one another's.
 *
 * @example
 * const cache = await remoteCache("http://127.0.0.1:7070", 3);
 */
export async function remoteCache(base: string, rank?: number, opts: RemoteCacheOptions = {}): Promise<ByteCache> {
  const root = base.replace(/\/+$/, "");
  const client = `${hostname()}:${process.pid}:${rank ?? "-"}:${randomBytes(4).toString("hex")}`;
  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const fetchStats = async () => {
    const res = await request(`${root}/v1/stats`, { dispatcher: agent });
    if (res.statusCode !== 200)
      throw new SdkError("ERR_CACHE_HTTP", `GET ${root}/v1/stats answered ${res.statusCode}`, {
        status: res.statusCode,
      });
    return ClientCounters.parse(await res.body.json());
  };
  let base0: { up: number; hits: number; misses: number };
  try {
    const s = await fetchStats();
    base0 = { up: s.bytesFromUpstream, hits: s.hits, misses: s.misses };
  } catch (cause) {
    throw new SdkError(
      "ERR_CACHE_UNREACHABLE",
      `Expected an origin-cache at ${root} but it did not answer /v1/stats: ${(cause as Error).message}`,
      { cause },
    );
  }
  let last: SourceStats = { bytesFetched: 0, cacheHits: 0, cacheMisses: 0 };
  const refresh = async () => {
    const s = await fetchStats();
    last = {
      bytesFetched: s.bytesFromUpstream - base0.up,
      cacheHits: s.hits - base0.hits,
      cacheMisses: s.misses - base0.misses,
    };
  };
  const timer = setInterval(() => void refresh().catch(() => undefined), 1000);
  timer.unref();
  const outage = new OutageWindow();
  // Span reads over GET land in pooled memory too, which the pipeline hands back once decoded.
  const pool = new ReadPool();
  // Plans and the plane's batches name objects by ids of this client's.
  const ids = new ObjectIdClient(client);
  const plane = wantsLocalPlane(root, opts.local) ? new LocalPlane(root, agent, pool, ids) : undefined;
  const sendPlan = async (ranges: readonly PlanRange[]): Promise<void> => {
    const res = await ids.send(ranges, (ref) =>
      request(`${root}/v1/plan`, {
        dispatcher: agent,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client,
          ...(ref.objects.length > 0 ? { objects: ref.objects } : {}),
          ranges: ranges.map((r, i) => ({ object: ref.ids[i], offset: r.offset, length: r.length })),
        }),
      }),
    );
    await res.body.dump();
  };
  return {
    read: (url, offset, length, etag) =>
      outage.run(async () => {
        const local = plane?.enabled ? await plane.read(url, offset, length, etag) : undefined;
        if (local) return local;
        const headers: Record<string, string> = { range: `bytes=${offset}-${offset + length - 1}` };
        if (etag !== undefined) headers["if-match"] = etag;
        const res = await request(`${root}/v1/fetch?url=${encodeURIComponent(url)}`, { dispatcher: agent, headers });
        if (res.statusCode === 206) return bodyInto(res.body, pool.take(length));
        const body = new Uint8Array(await res.body.arrayBuffer());
        if (res.statusCode !== 200) {
          let detail = "";
          // The cache's own code (ERR_ETAG_CHANGED, ERR_UPSTREAM_STATUS, …) is what callers branch on.
          let code: SdkErrorCode | RelayedErrorCode = SdkErrorCode.CacheHttp;
          try {
            const e = ErrorBody.parse(JSON.parse(Buffer.from(body).toString("utf8")));
            detail = `${e.error.code}: ${e.error.message}`;
            code = relayedCode(e.error.code);
          } catch {
            detail = Buffer.from(body.subarray(0, 200)).toString("utf8");
          }
          throw new SdkError(code, `origin-cache answered ${res.statusCode} for bytes ${offset}+${length}: ${detail}`, {
            status: res.statusCode,
          });
        }
        return body.subarray(offset, offset + length);
      }),
    plan(ranges) {
      plane?.plan(ranges);
      void sendPlan(ranges).catch(() => undefined);
    },
    pin(objects) {
      // HEAD pins the object (the cache's probe) and pulls none of its bytes.
      for (const o of objects)
        void request(`${root}/v1/fetch?url=${encodeURIComponent(o.url)}`, {
          dispatcher: agent,
          method: "HEAD",
          ...(o.etag === undefined ? {} : { headers: { "if-match": o.etag } }),
        })
          .then((res) => res.body.dump())
          .catch(() => undefined);
    },
    stats: () => last,
    refresh,
    async close() {
      clearInterval(timer);
      await refresh().catch(() => undefined);
      await plane?.close();
      await agent.close();
    },
  };
}

/**
 * A 206 body copied chunk by chunk into `into` (lent by the pool: no buffer of its own per read,
 * no concatenation); a body of another length than asked is ERR_CACHE_HTTP. A body that fails
 * gives `into` back to its pool: nothing else writes into it once the copy stopped.
 * Exported for its tests only.
 */
export async function bodyInto(body: AsyncIterable<Buffer>, into: Buffer): Promise<Uint8Array> {
  let at = 0;
  let more = false;
  try {
    for await (const chunk of body) {
      if (at + chunk.length > into.length) {
        more = true;
        break;
      }
      chunk.copy(into, at);
      at += chunk.length;
    }
  } catch (err) {
    releaseRead(into);
    throw err;
  }
  if (more || at !== into.length) {
    releaseRead(into);
    throw new SdkError(
      SdkErrorCode.CacheHttp,
      `Expected a body of ${into.length} bytes from the origin-cache but received ${more ? "more" : at}`,
    );
  }
  return into;
}
