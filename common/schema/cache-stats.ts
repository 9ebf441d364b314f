/**
 * `GET /v1/stats` of the origin-cache: defined here, beside the locate shapes, because the SDK's
 * client of a cache service reads it too, without loading the cache itself.
 */
import { z } from "zod";

export const CacheStats = z.object({
  hits: z.number(),
  misses: z.number(),
  coalesced: z.number(),
  hitRatio: z.number(),
  bytesFromUpstream: z.number(),
  bytesFromDisk: z.number(),
  bytesFromMemory: z.number(),
  bytesPassedThrough: z.number(),
  upstreamRequests: z.number(),
  retries: z.number(),
  hedges: z.number(),
  inFlight: z.number(),
  peakInFlight: z.number(),
  evictions: z.number(),
  corruptBlocks: z.number(),
  residentBytes: z.number(),
  maxBytes: z.number(),
  blocks: z.number(),
  blockSize: z.number(),
  upstreamLatencyMs: z.object({ p50: z.number(), p90: z.number(), p99: z.number(), samples: z.number() }),
  httpVersions: z.record(z.string(), z.enum(["h2", "http/1.1"])),
  /** Requests sent upstream by each client ("native", "node-http2", "undici"): which client pulled. */
  upstreamClients: z.record(z.string(), z.number()),
  /** Leases of the local data plane (POST /v1/locate) held now. */
  leases: z.number(),
  /** Blocks those leases hold (bounded by leaseBytes). */
  leasedBlocks: z.number(),
  /** Locate requests answered (single, batched or long-polled), each counted once. */
  locates: z.number(),
  /** fdatasync calls of the block store's group commits (one per slab a group wrote), each syncing many pulls' blocks. */
  syncs: z.number(),
  plan: z.object({
    clients: z.number(),
    pendingBlocks: z.number(),
    /** Blocks every client's plan names, read or not (bounded: see prefetch/planner.ts). */
    plannedBlocks: z.number(),
    prefetchedBlocks: z.number(),
    prefetchErrors: z.number(),
  }),
});
export type CacheStats = z.infer<typeof CacheStats>;
