/** Wire shapes of the cache's local API, defined once; the SDK imports them from origin-cache/index.ts. */
import { z } from "zod";
import { ObjectId, ObjectRef } from "../common/schema/object-ids.js";

export const PlanRange = z.object({
  url: z.string().min(1),
  offset: z.number().int().nonnegative(),
  length: z.number().int().positive(),
});
export type PlanRange = z.infer<typeof PlanRange>;

/** A range of an object named by its id (common/schema/object-ids.ts) instead of its URL. */
export const PlanRangeById = PlanRange.omit({ url: true }).extend({ object: ObjectId });
export type PlanRangeById = z.infer<typeof PlanRangeById>;

/** The client of a plan that names none: callers from before plans were per client share this one. */
export const ANONYMOUS_CLIENT = "anonymous";

export const PlanRequest = z.object({
  /** Whose plan: a new plan replaces only this client's; stable per open dataset (host, pid, rank). */
  client: z.string().min(1).max(256).default(ANONYMOUS_CLIENT),
  ranges: z.array(z.union([PlanRange, PlanRangeById])).max(1_000_000),
  /** Objects registered (or refreshed) under the client's ids before its ranges are read. */
  objects: z.array(ObjectRef).max(1_000_000).optional(),
  /** Overrides the cache's prefetch budget for this plan (still capped by it). */
  budgetBytes: z.number().int().positive().optional(),
});
export type PlanRequest = z.infer<typeof PlanRequest>;

export const PlanAck = z.object({ ranges: z.number().int(), blocks: z.number().int(), budgetBytes: z.number().int() });
export type PlanAck = z.infer<typeof PlanAck>;

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
