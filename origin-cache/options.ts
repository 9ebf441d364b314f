/** Options of the cache, validated before any I/O, with their defaults. */
import type { ConnectionOptions } from "node:tls";
import { describeReceived } from "../common/errors.js";
import { CacheArgumentError } from "./errors.js";
import type { Logger } from "./log.js";

export interface RangeCacheOptions {
  // What to cache
  /** Upstream base URLs (the edge); the cache fetches nothing else. */
  readonly upstreams: readonly string[];
  /** Directory of the block store; created when missing. */
  readonly dir: string;
  /**
   * Let the directory's group read the store: directories 2750, files 0640 (set the group with
   * chgrp on `dir`; files take it from there). Default false: 0700 and 0600, the cache's user alone.
   */
  readonly groupRead?: boolean;
  /** Hard bound on the bytes in `dir`. */
  readonly maxBytes: number;
  // How to fetch
  /**
   * Block size in bytes, a multiple of 4096. Default: the smallest power of two from 16 KiB up
   * to 8 MiB that keeps `maxBytes` within 256 Ki blocks (see defaultBlockSize).
   */
  readonly blockSize?: number;
  /**
   * Most bytes one upstream request asks for: consecutive blocks missing from a read, a stream's
   * lookahead or the plan go upstream as one range request up to this size (at least one block);
   * default 8 MiB.
   */
  readonly coalesceBytes?: number;
  /** Upstream requests in flight across all origins; default 256. */
  readonly maxInFlight?: number;
  /** HTTP/1.1 sockets per origin (HTTP/2 multiplexes); default 32. */
  readonly connections?: number;
  /** Streams per HTTP/2 connection; default 100. */
  readonly streamsPerConnection?: number;
  /** Retries per range after a transient failure; default 6. */
  readonly retries?: number;
  readonly retryMinDelayMs?: number;
  readonly retryMaxDelayMs?: number;
  /** A response whose headers take longer is retried; default 30 s. */
  readonly headersTimeoutMs?: number;
  /** A body that stalls longer is resumed from where it stopped; default 30 s. */
  readonly bodyTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Hedge a range whose response headers take longer than this (ms); off by default. */
  readonly hedgeAfterMs?: number;
  /** Bytes of the plan prefetched ahead of the reader; default min(maxBytes / 2, 2 GiB). */
  readonly prefetchBudgetBytes?: number;
  /** Concurrent block pulls for the plan; default 32. */
  readonly prefetchConcurrency?: number;
  /** A client's plan is dropped after this long (ms) without a new plan or a read of its blocks, so a dead rank's plan stops pinning blocks; default 60 s. */
  readonly planIdleMs?: number;
  /**
   * Most bytes of the store that leases of the local data plane (POST /v1/locate) may hold at
   * once, all clients together; default half of `maxBytes`, so that eviction always has room.
   */
  readonly leaseBytes?: number;
  /** The same for the leases of one client (a batch's `client`; single locates count as one); default a quarter of `maxBytes`. */
  readonly clientLeaseBytes?: number;
  /**
   * How long a URL without an `exp` parameter (a plain upstream, a presigned URL of another form)
   * stays accepted after upstream accepted it; then the next request with it asks upstream once
   * more. A URL with an `exp` is accepted until then. Default 60 s.
   */
  readonly grantMs?: number;
  /**
   * The HTTP/2 client of https upstreams: "undici" (default; undici's Pool), "node-http2"
   * (node:http2 sessions, one per origin while its streams fit; the same CPU per GB as undici in
   * the transport bench, bench/README.md), or "native" (libcurl in the addon, on a thread of its
   * own, bodies written straight into pull buffers; it takes http upstreams too). With "undici" or
   * "node-http2", HTTP/1.1 upstreams use undici. "native" needs libcurl.so.4 on the host: without
   * it the cache does not start (ERR_UPSTREAM_CLIENT_UNAVAILABLE). EC_UPSTREAM_CLIENT sets the default.
   */
  readonly upstreamClient?: "native" | "node-http2" | "undici";
  /** TLS for https upstreams, e.g. the CA of a self-signed test edge. */
  readonly tls?: Pick<ConnectionOptions, "ca" | "rejectUnauthorized" | "servername">;
  /** A pino logger, or a level for the default one (default "info"; tests pass "silent"). */
  readonly logger?: Logger;
  readonly logLevel?: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
}

/**
 * Most blocks the default block size lets `maxBytes` hold. Each block is a slab slot (a 4 KiB
 * header plus its data) and an index entry in memory, whose header is re-read on every restart:
 * 256 Ki blocks is 256 Ki header reads (1 GiB) before the store opens.
 */
export const DEFAULT_MAX_BLOCKS = 1 << 18;
const MIN_DEFAULT_BLOCK = 16 << 10;
const MAX_DEFAULT_BLOCK = 8 << 20;

/**
 * The default block size for a store of `maxBytes`: small blocks keep the bytes a random clip
 * pulls near its span (≈ span + one block; upstream requests no longer grow with it, since
 * consecutive missing blocks go as one request), large stores get larger blocks so the count of
 * slots and index entries stays bounded. 16 KiB up to 4 GiB; 64 KiB at 16 GiB; 1 MiB at 256 GiB.
 *
 * @example
 * defaultBlockSize(256 << 20); // 16384
 */
export function defaultBlockSize(maxBytes: number): number {
  let size = MIN_DEFAULT_BLOCK;
  while (size < MAX_DEFAULT_BLOCK && maxBytes / (size + 4096) > DEFAULT_MAX_BLOCKS) size *= 2;
  return size;
}

export type ResolvedOptions = Required<Omit<RangeCacheOptions, "tls" | "logger" | "logLevel" | "hedgeAfterMs">> &
  Pick<RangeCacheOptions, "tls" | "logger" | "logLevel" | "hedgeAfterMs">;

function int(name: string, value: unknown, min: number, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new CacheArgumentError(`Expected an integer ≥ ${min} for ${name} but received ${describeReceived(value)}`);
  }
  return value;
}

const UPSTREAM_CLIENTS = ["native", "node-http2", "undici"] as const;

function upstreamClient(value: unknown): (typeof UPSTREAM_CLIENTS)[number] {
  const v = value ?? (process.env.EC_UPSTREAM_CLIENT || undefined);
  if (v === undefined) return "undici";
  if ((UPSTREAM_CLIENTS as readonly unknown[]).includes(v)) return v as (typeof UPSTREAM_CLIENTS)[number];
  throw new CacheArgumentError(
    `Expected "native", "node-http2" or "undici" for upstreamClient${value === undefined ? " (EC_UPSTREAM_CLIENT)" : ""} but received ${describeReceived(v)}`,
  );
}

export function resolveOptions(o: RangeCacheOptions): ResolvedOptions {
  if (!Array.isArray(o.upstreams) || o.upstreams.length === 0 || !o.upstreams.every((u) => typeof u === "string")) {
    throw new CacheArgumentError(
      `Expected a non-empty array of URLs for upstreams but received ${describeReceived(o.upstreams)}`,
    );
  }
  if (typeof o.dir !== "string" || o.dir.length === 0) {
    throw new CacheArgumentError(`Expected a directory path for dir but received ${describeReceived(o.dir)}`);
  }
  const maxBytes = int("maxBytes", o.maxBytes, 0);
  const blockSize = int("blockSize", o.blockSize, 4096, defaultBlockSize(maxBytes));
  if (blockSize % 4096 !== 0 || blockSize > 256 << 20) {
    throw new CacheArgumentError(`Expected a multiple of 4096 up to 256 MiB for blockSize but received ${blockSize}`);
  }
  return {
    upstreams: o.upstreams,
    dir: o.dir,
    maxBytes,
    blockSize,
    coalesceBytes: int("coalesceBytes", o.coalesceBytes, 1, 8 << 20),
    maxInFlight: int("maxInFlight", o.maxInFlight, 1, 256),
    connections: int("connections", o.connections, 1, 32),
    streamsPerConnection: int("streamsPerConnection", o.streamsPerConnection, 1, 100),
    retries: int("retries", o.retries, 0, 6),
    retryMinDelayMs: int("retryMinDelayMs", o.retryMinDelayMs, 0, 25),
    retryMaxDelayMs: int("retryMaxDelayMs", o.retryMaxDelayMs, 0, 2000),
    headersTimeoutMs: int("headersTimeoutMs", o.headersTimeoutMs, 1, 30_000),
    bodyTimeoutMs: int("bodyTimeoutMs", o.bodyTimeoutMs, 1, 30_000),
    connectTimeoutMs: int("connectTimeoutMs", o.connectTimeoutMs, 1, 10_000),
    prefetchBudgetBytes: int(
      "prefetchBudgetBytes",
      o.prefetchBudgetBytes,
      0,
      Math.min(Math.floor(maxBytes / 2), 2 * 2 ** 30),
    ),
    prefetchConcurrency: int("prefetchConcurrency", o.prefetchConcurrency, 1, 32),
    planIdleMs: int("planIdleMs", o.planIdleMs, 1, 60_000),
    grantMs: int("grantMs", o.grantMs, 1, 60_000),
    groupRead: o.groupRead === true,
    leaseBytes: int("leaseBytes", o.leaseBytes, 0, Math.floor(maxBytes / 2)),
    clientLeaseBytes: int("clientLeaseBytes", o.clientLeaseBytes, 0, Math.floor(maxBytes / 4)),
    upstreamClient: upstreamClient(o.upstreamClient),
    hedgeAfterMs: o.hedgeAfterMs === undefined ? undefined : int("hedgeAfterMs", o.hedgeAfterMs, 1),
    tls: o.tls,
    logger: o.logger,
    logLevel: o.logLevel,
  };
}
