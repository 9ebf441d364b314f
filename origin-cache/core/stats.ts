/** The cache's counters as the CacheStats wire shape (GET /v1/stats, `ec cache`, the SDK's stats). */
import type { Limiter } from "../../common/limiter.js";
import type { CacheMetrics } from "../metrics.js";
import type { Planner } from "../prefetch/planner.js";
import type { CacheStats } from "../schema.js";
import type { BlockStore } from "../store/block-store.js";
import type { UpstreamPools } from "../upstream/pool.js";

export interface StatsSources {
  readonly metrics: CacheMetrics;
  readonly limiter: Limiter;
  readonly store: BlockStore;
  readonly pools: UpstreamPools;
  readonly planner: Planner;
  /** Leases of the local data plane held now. */
  readonly leases: number;
  /** Blocks those leases hold. */
  readonly leasedBlocks: number;
  readonly maxBytes: number;
  readonly blockSize: number;
}

export function cacheStats(s: StatsSources): CacheStats {
  const m = s.metrics;
  const reads = m.hits + m.misses;
  return {
    hits: m.hits,
    misses: m.misses,
    coalesced: m.coalesced,
    hitRatio: reads ? m.hits / reads : 0,
    bytesFromUpstream: m.bytesFromUpstream,
    bytesFromDisk: m.bytesFromDisk,
    bytesFromMemory: m.bytesFromMemory,
    bytesPassedThrough: m.bytesPassedThrough,
    upstreamRequests: m.upstreamRequests,
    retries: m.retries,
    hedges: m.hedges,
    inFlight: s.limiter.active,
    peakInFlight: s.limiter.peak,
    evictions: s.store.evictions,
    corruptBlocks: m.corruptBlocks,
    residentBytes: s.store.residentBytes,
    maxBytes: s.maxBytes,
    blocks: s.store.blocks,
    blockSize: s.blockSize,
    upstreamLatencyMs: m.latencyPercentiles(),
    httpVersions: s.pools.versions(),
    upstreamClients: s.pools.requests(),
    leases: s.leases,
    leasedBlocks: s.leasedBlocks,
    locates: m.locates,
    syncs: s.store.syncs,
    plan: {
      clients: s.planner.clients,
      pendingBlocks: s.planner.pendingBlocks,
      plannedBlocks: s.planner.plannedBlocks,
      prefetchedBlocks: s.planner.prefetched,
      prefetchErrors: s.planner.errors,
    },
  };
}
