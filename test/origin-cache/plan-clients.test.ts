import { describe, expect, it } from "vitest";
import { PlanRequest, type RangeCache, type RangeCacheOptions } from "../../origin-cache/index.js";
import { objectBytes, until, useUpstream } from "./fixtures.js";

const BLOCK = 256 << 10;
const a = "/v1/objects/pa.mp4";
const b = "/v1/objects/pb.mp4";
const c = "/v1/objects/pc.mp4";
const up = useUpstream(
  { [a]: objectBytes(6 * BLOCK, "pa"), [b]: objectBytes(3 * BLOCK, "pb"), [c]: objectBytes(BLOCK, "pc") },
  { blockSize: BLOCK },
);
const { signed } = up;

async function openCache(over: Partial<RangeCacheOptions>): Promise<RangeCache> {
  const { cache } = await up.openCache(over);
  // Pins first, so the counts below are block pulls only.
  await Promise.all([a, b, c].map((p) => cache.object(signed(p))));
  up.rs.resetCounts();
  return cache;
}

const whole = (path: string, blocks: number) => [{ url: signed(path), offset: 0, length: blocks * BLOCK }];

describe("per-client prefetch plans", () => {
  it("a plan without a client is the anonymous client's", () => {
    expect(PlanRequest.parse({ ranges: [] }).client).toBe("anonymous");
    expect(PlanRequest.safeParse({ client: "", ranges: [] }).success).toBe(false);
  });

  it("prefetches two clients' plans, sharing the budget between them", async () => {
    // One block per pull, one pull at a time, so the second plan is in before the first fills the budget.
    const cache = await openCache({ prefetchBudgetBytes: 4 * BLOCK, prefetchConcurrency: 1, coalesceBytes: BLOCK });
    cache.plan(whole(a, 6), { client: "rank0" });
    cache.plan(whole(b, 3), { client: "rank1" });
    expect(cache.stats().plan.clients).toBe(2);
    await until(() => cache.stats().plan.prefetchedBlocks >= 4, "four prefetched blocks");
    expect(up.rs.requests(a)).toBe(2);
    expect(up.rs.requests(b)).toBe(2);
    const misses = cache.stats().misses;
    await cache.read(signed(a), 0, 2 * BLOCK);
    await cache.read(signed(b), 0, 2 * BLOCK);
    expect(cache.stats().misses).toBe(misses);
  });

  it("a client's new plan replaces only its own", async () => {
    const cache = await openCache({ prefetchBudgetBytes: 6 * BLOCK, prefetchConcurrency: 1, coalesceBytes: BLOCK });
    cache.plan(whole(a, 6), { client: "rank0" });
    cache.plan(whole(b, 3), { client: "rank1" });
    cache.plan(whole(c, 1), { client: "rank0" });
    // a's first block (already running when rank0 replanned), b's three and c's one.
    await until(() => cache.stats().plan.prefetchedBlocks >= 5, "rank1's plan and rank0's new one");
    expect(up.rs.requests(b)).toBe(3);
    expect(up.rs.requests(c)).toBe(1);
    expect(cache.stats().plan.pendingBlocks).toBe(4);
    const misses = cache.stats().misses;
    await cache.read(signed(b), 0, 3 * BLOCK);
    await cache.read(signed(c), 0, BLOCK);
    expect(cache.stats().misses).toBe(misses);
    expect(up.rs.requests(a)).toBe(1);
  });

  it("pulls one object's consecutive spans as one run where the plan names them apart", async () => {
    const cache = await openCache({ prefetchBudgetBytes: 6 * BLOCK, coalesceBytes: 6 * BLOCK });
    // A random order's window: a's next span two spans after its first, b's in between.
    cache.plan(
      [
        { url: signed(a), offset: 0, length: 2 * BLOCK },
        { url: signed(b), offset: 0, length: 2 * BLOCK },
        { url: signed(a), offset: 2 * BLOCK, length: 2 * BLOCK },
      ],
      { client: "rank0" },
    );
    await until(() => cache.stats().plan.prefetchedBlocks >= 6, "the plan prefetched");
    await until(() => cache.stats().residentBytes >= 6 * BLOCK, "its blocks on disk");
    // Before, a's two spans went upstream as two requests (a run stopped at b's span).
    expect(up.rs.requests(a)).toBe(1);
    expect(up.rs.requests(b)).toBe(1);
    expect(up.rs.ranges).toContain(`bytes=0-${4 * BLOCK - 1}`);
    const misses = cache.stats().misses;
    await cache.read(signed(a), 0, 4 * BLOCK);
    await cache.read(signed(b), 0, 2 * BLOCK);
    expect(cache.stats().misses).toBe(misses);
  });

  it("a restated plan does not take again the blocks its predecessor prefetched", async () => {
    const cache = await openCache({ prefetchBudgetBytes: 6 * BLOCK, coalesceBytes: 6 * BLOCK });
    cache.plan(whole(a, 3), { client: "rank0" });
    await until(() => cache.stats().plan.prefetchedBlocks >= 3, "the first plan prefetched");
    // The SDK restates its window every few clips: the same blocks and one more.
    cache.plan(whole(a, 3), { client: "rank0" });
    cache.plan(whole(a, 4), { client: "rank0" });
    await until(() => cache.stats().plan.prefetchedBlocks >= 4, "the new block prefetched");
    await until(() => cache.stats().residentBytes >= 4 * BLOCK, "the new block on disk");
    // Before, each restatement ran the prefetch over its whole window again (3 + 3 + 4 blocks).
    expect(cache.stats().plan.prefetchedBlocks).toBe(4);
    expect(up.rs.requests(a)).toBe(2);
    expect(up.rs.ranges.at(-1)).toBe(`bytes=${3 * BLOCK}-${4 * BLOCK - 1}`);
  });

  it("a restated plan takes again a block whose prefetch failed", async () => {
    const cache = await openCache({ prefetchBudgetBytes: 6 * BLOCK, coalesceBytes: 6 * BLOCK, retries: 0 });
    up.wan.inject({ fault: { kind: "503" }, match: (path) => path.startsWith(a) });
    cache.plan(whole(a, 2), { client: "rank0" });
    await until(() => cache.stats().plan.prefetchErrors >= 1, "the failed prefetch");
    cache.plan(whole(a, 2), { client: "rank0" });
    await until(() => cache.stats().plan.prefetchedBlocks >= 2, "the retaken blocks");
    const misses = cache.stats().misses;
    await cache.read(signed(a), 0, 2 * BLOCK);
    expect(cache.stats().misses).toBe(misses);
  });

  it("drops an idle client's plan, so its blocks are no longer spared by eviction", async () => {
    const cache = await openCache({ maxBytes: 4.5 * BLOCK, prefetchBudgetBytes: 3 * BLOCK, planIdleMs: 100 });
    cache.plan(whole(a, 3), { client: "dead-rank" });
    await until(() => cache.stats().residentBytes >= 3 * BLOCK, "the plan on disk");
    await cache.read(signed(b), 0, BLOCK);
    await until(() => cache.stats().residentBytes >= 4 * BLOCK, "b's first block on disk");
    await until(() => cache.stats().plan.clients === 0, "the idle plan to expire");
    // The store is full: the least recently used block goes, one of the expired plan's, where a
    // live plan would have made b's block go instead.
    await cache.read(signed(b), BLOCK, BLOCK);
    await until(
      () => cache.stats().evictions >= 1 && cache.stats().residentBytes >= 4 * BLOCK,
      "an eviction for b's second block",
    );
    const misses = cache.stats().misses;
    await cache.read(signed(b), 0, BLOCK);
    expect(cache.stats().misses).toBe(misses);
    await cache.read(signed(a), 0, 3 * BLOCK);
    expect(cache.stats().misses).toBe(misses + 1);
  });
});
