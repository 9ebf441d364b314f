import { describe, expect, it } from "vitest";
import { createRangeCache } from "../../origin-cache/index.js";
import { dirBytes, objectBytes, prng, until, useUpstream, watchDirSize } from "./fixtures.js";

const BLOCK = 256 << 10;
const objects = new Map<string, Buffer>([
  ["/v1/objects/a.mp4", objectBytes(6 * BLOCK + 12345, "a")],
  ["/v1/objects/b.mp4", objectBytes(3 * BLOCK, "b")],
  ["/v1/objects/c.mp4", objectBytes(777, "c")],
]);
const up = useUpstream(Object.fromEntries(objects), { blockSize: BLOCK });
const { signed, openCache } = up;

function randomRanges(n: number, seed: number): { path: string; offset: number; length: number }[] {
  const rnd = prng(seed);
  const paths = [...objects.keys()];
  return Array.from({ length: n }, () => {
    const path = paths[Math.floor(rnd() * paths.length)] as string;
    const size = (objects.get(path) as Buffer).length;
    const offset = Math.floor(rnd() * size);
    const length = 1 + Math.floor(rnd() * Math.min(size - offset, 2 * BLOCK));
    return { path, offset, length };
  });
}

describe("createRangeCache", () => {
  it("serves byte-exact ranges under hundreds of concurrent overlapping reads over HTTP/2", async () => {
    const { cache } = await openCache();
    const ranges = randomRanges(300, 1);
    const got = await Promise.all(ranges.map((r) => cache.read(signed(r.path), r.offset, r.length)));
    ranges.forEach((r, i) => {
      expect(
        Buffer.from(got[i] as Uint8Array).equals(
          (objects.get(r.path) as Buffer).subarray(r.offset, r.offset + r.length),
        ),
      ).toBe(true);
    });
    const s = cache.stats();
    expect(Object.values(s.httpVersions)).toEqual(["h2"]);
    // At most one pull per block plus one probe per object.
    expect(s.upstreamRequests).toBeLessThanOrEqual(7 + 3 + 1 + 3);
    expect(s.coalesced + s.hits).toBeGreaterThan(0);
  });

  it("shares one upstream request among concurrent misses of one block", async () => {
    const { cache } = await openCache();
    const path = "/v1/objects/a.mp4";
    await cache.object(signed(path));
    up.rs.resetCounts();
    const reads = await Promise.all(
      Array.from({ length: 50 }, (_, i) => cache.read(signed(path), 5 * BLOCK + i * 100, 1000)),
    );
    expect(up.rs.requests(path)).toBe(1);
    expect(cache.stats().coalesced).toBe(49);
    reads.forEach((r, i) =>
      expect(
        Buffer.from(r).equals((objects.get(path) as Buffer).subarray(5 * BLOCK + i * 100, 5 * BLOCK + i * 100 + 1000)),
      ).toBe(true),
    );
  });

  it("keeps the directory under maxBytes during a workload larger than the bound", async () => {
    const maxBytes = 5 * (BLOCK + 4096);
    const { cache, dir } = await openCache({ maxBytes, prefetchBudgetBytes: 0 });
    const watch = watchDirSize(dir);
    for (let round = 0; round < 4; round++) {
      const ranges = randomRanges(40, 10 + round);
      const got = await Promise.all(ranges.map((r) => cache.read(signed(r.path), r.offset, r.length)));
      ranges.forEach((r, i) =>
        expect(
          Buffer.from(got[i] as Uint8Array).equals(
            (objects.get(r.path) as Buffer).subarray(r.offset, r.offset + r.length),
          ),
        ).toBe(true),
      );
    }
    const peak = await watch.stop();
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(maxBytes);
    expect(cache.stats().evictions).toBeGreaterThan(0);
  });

  it("streams a span larger than the whole bound through without caching", async () => {
    const { cache, dir } = await openCache({ maxBytes: 100 << 10 });
    const data = objects.get("/v1/objects/a.mp4") as Buffer;
    const got = await cache.read(signed("/v1/objects/a.mp4"), 1000, 4 * BLOCK);
    expect(Buffer.from(got).equals(data.subarray(1000, 1000 + 4 * BLOCK))).toBe(true);
    await until(() => cache.stats().bytesPassedThrough >= 4 * BLOCK, "pass-through accounting");
    expect(await dirBytes(dir)).toBe(0);
  });

  it("keeps its hits across a restart", async () => {
    const path = "/v1/objects/a.mp4";
    const data = objects.get(path) as Buffer;
    const first = await openCache();
    await first.cache.read(signed(path), 0, data.length);
    await first.cache.close();
    up.rs.resetCounts();
    const { cache } = await openCache({}, first.dir);
    expect(Buffer.from(await cache.read(signed(path), 0, data.length)).equals(data)).toBe(true);
    expect(up.rs.requests(path)).toBe(1); // the version probe only
    expect(cache.stats().misses).toBe(0);
    expect(cache.stats().hits).toBe(7);
  });

  it("reads into the caller's buffer, from upstream, memory and disk, and refuses one too small", async () => {
    const path = "/v1/objects/a.mp4";
    const data = objects.get(path) as Buffer;
    const { cache } = await openCache();
    const into = new Uint8Array(3 * BLOCK + 100);
    // A view into a larger buffer, so an offset of its own must be kept.
    const view = into.subarray(100);
    const check = async (offset: number, length: number): Promise<void> => {
      view.fill(0xee);
      const got = await cache.read(signed(path), offset, length, { into: view });
      expect(got.buffer === into.buffer).toBe(true);
      expect(got.byteOffset).toBe(100);
      expect(got.length).toBe(length);
      expect(Buffer.from(got).equals(data.subarray(offset, offset + length))).toBe(true);
      // Nothing past the span is touched.
      expect(view.subarray(length).every((b) => b === 0xee)).toBe(true);
    };
    await check(BLOCK - 7, 2 * BLOCK + 14); // cold: pulled
    await check(BLOCK + 5, BLOCK); // in memory or landed
    await until(() => cache.stats().blocks >= 3, "the pulled blocks to land");
    await check(BLOCK - 7, 2 * BLOCK + 14); // from the slabs
    expect(cache.stats().bytesFromDisk).toBeGreaterThan(0);
    await expect(cache.read(signed(path), 0, view.length + 1, { into: view })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
      message: `Expected a Uint8Array of at least ${view.length + 1} bytes for into but received ${view.length} bytes`,
    });
    await expect(cache.read(signed(path), 0, 1, { into: [1, 2] as never })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
      message: "Expected a Uint8Array of at least 1 bytes for into but received an array of length 2",
    });
  });

  it("refuses URLs outside the configured upstreams", async () => {
    const { cache } = await openCache({ upstreams: [`${up.wan.url}/v1/objects/`] });
    up.rs.resetCounts();
    await expect(cache.read("http://127.0.0.1:9/v1/objects/a.mp4", 0, 1)).rejects.toMatchObject({
      code: "ERR_UPSTREAM_NOT_ALLOWED",
    });
    await expect(cache.read(`${up.wan.url}/v1/keys`, 0, 1)).rejects.toMatchObject({ code: "ERR_UPSTREAM_NOT_ALLOWED" });
    await expect(cache.read(`${up.wan.url.replace("https", "http")}/v1/objects/a.mp4`, 0, 1)).rejects.toMatchObject({
      code: "ERR_UPSTREAM_NOT_ALLOWED",
    });
    await expect(cache.read("file:///etc/passwd", 0, 1)).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    expect(() => cache.plan([{ url: "https://example.com/x", offset: 0, length: 1 }])).toThrow(
      expect.objectContaining({ code: "ERR_UPSTREAM_NOT_ALLOWED" }),
    );
    expect(up.rs.requests()).toBe(0);
  });

  it("rejects a range past the end and bad arguments with typed errors", async () => {
    const { cache } = await openCache();
    await expect(cache.read(signed("/v1/objects/c.mp4"), 700, 100)).rejects.toMatchObject({
      code: "ERR_RANGE_NOT_SATISFIABLE",
    });
    await expect(cache.read(signed("/v1/objects/c.mp4"), -1, 1)).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
    });
    await expect(cache.read(signed("/v1/objects/c.mp4"), 0, 1, { etag: '"not-the-etag"' })).rejects.toMatchObject({
      code: "ERR_ETAG_CHANGED",
    });
    await expect(createRangeCache({ upstreams: [up.wan.url], dir: "/tmp/x", maxBytes: -3 })).rejects.toThrow(
      "Expected an integer ≥ 0 for maxBytes but received -3",
    );
  });

  it("rejects reads pending at close with CacheClosedError, not the torn-down pool's errors", async () => {
    const { cache } = await openCache();
    const b = signed("/v1/objects/b.mp4");
    await cache.object(b);
    const fired = up.wan.stats.faultsFired;
    up.wan.inject({ fault: { kind: "stall", afterBytes: 1000, ms: 3000 }, times: 2 });
    const drain = async (): Promise<void> => {
      for await (const _ of cache.stream(b, BLOCK, 2 * BLOCK));
    };
    const pending = [cache.read(b, 0, BLOCK), drain()];
    for (const p of pending) p.catch(() => {});
    await until(() => up.wan.stats.faultsFired >= fired + 2, "both reads to stall upstream");
    await cache.close();
    for (const p of pending)
      await expect(p).rejects.toMatchObject({ name: "CacheClosedError", code: "ERR_CACHE_CLOSED" });
    await expect(cache.read(b, 0, 1)).rejects.toMatchObject({ code: "ERR_CACHE_CLOSED" });
    up.wan.clearFaults();
  });

  it("prefetches the plan soonest first within its budget, and a new plan replaces the old", async () => {
    const { cache } = await openCache({ prefetchBudgetBytes: 3 * BLOCK, prefetchConcurrency: 8 });
    const a = "/v1/objects/a.mp4";
    const b = "/v1/objects/b.mp4";
    await cache.object(signed(a));
    await cache.object(signed(b));
    up.rs.resetCounts();
    const ack = cache.plan([{ url: signed(a), offset: 0, length: 6 * BLOCK }]);
    expect(ack.blocks).toBe(6);
    await until(() => cache.stats().plan.prefetchedBlocks >= 3, "three prefetched blocks");
    // The window's three consecutive blocks go as one range.
    expect(up.rs.ranges).toEqual([`bytes=0-${3 * BLOCK - 1}`]);
    // Reading the first block moves the window by one.
    await cache.read(signed(a), 0, 10);
    await until(() => cache.stats().plan.prefetchedBlocks >= 4, "the window to move");
    expect(up.rs.ranges).toContain(`bytes=${3 * BLOCK}-${4 * BLOCK - 1}`);
    cache.plan([{ url: signed(b), offset: 0, length: 2 * BLOCK }]);
    await until(() => cache.stats().plan.prefetchedBlocks >= 6, "the new plan");
    expect(up.rs.requests(a)).toBe(2);
    expect(up.rs.requests(b)).toBe(1);
    const before = cache.stats().misses;
    await cache.read(signed(b), 0, 2 * BLOCK);
    expect(cache.stats().misses).toBe(before);
  });
});
