/**
 * Coalescing: the blocks a read (or a stream window, or a planned run) still lacks go upstream as
 * one range request per run of consecutive blocks, split into blocks as the bytes arrive. Counted
 * on a real loopback upstream (HTTP/1.1 object server behind the TLS + HTTP/2 WAN emulator).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRangeCache, type RangeCache, type RangeCacheOptions } from "../../origin-cache/index.js";
import { DEFAULT_MAX_BLOCKS, resolveOptions } from "../../origin-cache/options.js";
import { SlabFiles } from "../../origin-cache/store/slab-files.js";
import { slotBytesFor } from "../../origin-cache/store/slot.js";
import { FLUSH_BYTES } from "../../origin-cache/store/write-behind.js";
import { dirBytes, objectBytes, slabSlots, tempDir, until, useUpstream } from "./fixtures.js";

const BLOCK = 16 << 10;
const PATH = "/v1/objects/co.mp4";
const OTHER = "/v1/objects/co2.mp4";
const data = objectBytes(40 * BLOCK + 1234, "coalesce");
const other = objectBytes(12 * BLOCK, "coalesce-2");
const up = useUpstream({ [PATH]: data, [OTHER]: other }, { blockSize: BLOCK, retryMinDelayMs: 5, retryMaxDelayMs: 50 });
const { cleanups } = up;

const url = (path = PATH): string => up.signed(path);
const range = (first: number, last: number, size = data.length): string =>
  `bytes=${first * BLOCK}-${Math.min(size, (last + 1) * BLOCK) - 1}`;
const exact = (got: Uint8Array, offset: number, length: number, of = data): boolean =>
  Buffer.from(got).equals(of.subarray(offset, offset + length));

async function openCache(
  over: Partial<RangeCacheOptions> = {},
  dir?: string,
): Promise<{ cache: RangeCache; dir: string }> {
  const opened = await up.openCache(over, dir);
  // Pins first, so the counts below are block pulls only.
  await opened.cache.object(url());
  await opened.cache.object(url(OTHER));
  up.rs.resetCounts();
  return opened;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("coalesced upstream requests", () => {
  it("writes the blocks of one pull with one slab write, side by side, each slot checked on its own", async () => {
    const { cache, dir } = await openCache();
    const write = vi.spyOn(SlabFiles.prototype, "write");
    const offset = 30 * BLOCK;
    const length = data.length - offset; // blocks 30..40, the last one short
    expect(exact(await cache.read(url(), offset, length), offset, length)).toBe(true);
    expect(up.rs.ranges).toEqual([range(30, 40)]);
    await until(() => cache.stats().blocks === 11, "eleven blocks on disk");
    expect(write).toHaveBeenCalledTimes(1);
    await cache.close();
    const slots = (await slabSlots(dir)).sort((a, b) => a.offset - b.offset);
    expect(slots.map((s) => s.header.index)).toEqual(Array.from({ length: 11 }, (_, i) => 30 + i));
    expect(slots.map((s) => s.offset)).toEqual(Array.from({ length: 11 }, (_, i) => i * slotBytesFor(BLOCK)));
    expect(slots.at(-1)?.header.dataLength).toBe(1234);
    // After a restart the slots are indexed one by one, and serve the bytes with no request.
    const { cache: again } = await up.openCache({}, dir);
    expect(again.stats().blocks).toBe(11);
    up.rs.resetCounts();
    expect(exact(await again.read(url(), offset, length), offset, length)).toBe(true);
    expect(up.rs.requests()).toBe(1); // the pin only
    expect(again.stats().hits).toBe(11);
    expect(again.stats().corruptBlocks).toBe(0);
  });

  it("takes one latency sample per pull, however many blocks it brings", async () => {
    const { cache } = await openCache();
    const offset = 30 * BLOCK;
    expect(exact(await cache.read(url(), offset, data.length - offset), offset, data.length - offset)).toBe(true);
    expect(exact(await cache.read(url(OTHER), 0, 3 * BLOCK), 0, 3 * BLOCK, other)).toBe(true);
    expect(up.rs.ranges).toEqual([range(30, 40), range(0, 2, other.length)]);
    expect(cache.stats().upstreamLatencyMs.samples).toBe(2);
    expect(await cache.metrics()).toMatch(/^ec_cache_upstream_block_seconds_count 2$/m);
    await cache.close();
  });

  it("makes the blocks of ten cold pulls durable with one fdatasync, readable before it", async () => {
    const { cache } = await openCache();
    const t0 = Date.now();
    // Ten cold reads of four blocks each, one after another: ten pulls, ten slab writes.
    for (let p = 0; p < 10; p++) {
      const offset = p * 4 * BLOCK;
      expect(exact(await cache.read(url(), offset, 4 * BLOCK), offset, 4 * BLOCK)).toBe(true);
      await until(() => cache.stats().blocks === 4 * (p + 1), `pull ${p} on disk`);
    }
    expect(up.rs.requests()).toBe(10);
    // A group syncs a second after its first write: stored and served before that, one sync for all.
    expect(cache.stats().syncs).toBeLessThanOrEqual(Math.floor((Date.now() - t0) / 1000));
    await until(() => cache.stats().syncs >= 1, "the group synced", 5000);
    expect(cache.stats().syncs).toBeLessThanOrEqual(Math.ceil((Date.now() - t0) / 1000));
  });

  it("stores a long pull's blocks every FLUSH_BYTES, so a located read need not wait for the pull's end", async () => {
    const { cache } = await openCache();
    const write = vi.spyOn(SlabFiles.prototype, "write");
    expect(exact(await cache.read(url(), 0, data.length), 0, data.length)).toBe(true);
    expect(up.rs.ranges).toEqual([range(0, 40)]);
    await until(() => cache.stats().blocks === 41, "41 blocks on disk");
    // 41 blocks of 16 KiB in pieces of 256 KiB: 16, 16 and 9 blocks, one write each.
    expect(FLUSH_BYTES / BLOCK).toBe(16);
    expect(write).toHaveBeenCalledTimes(3);
    await cache.close();
  });

  it("pulls a read spanning ten missing blocks with one range request over HTTP/2, then serves it from disk", async () => {
    const { cache } = await openCache();
    const offset = 3 * BLOCK + 100;
    const length = 9 * BLOCK + 50; // blocks 3..12
    expect(exact(await cache.read(url(), offset, length), offset, length)).toBe(true);
    expect(up.rs.ranges).toEqual([range(3, 12)]);
    expect(Object.values(cache.stats().httpVersions)).toEqual(["h2"]);
    expect(cache.stats().misses).toBe(10);
    await until(() => cache.stats().blocks === 10, "ten blocks on disk");
    up.rs.resetCounts();
    expect(exact(await cache.read(url(), offset, length), offset, length)).toBe(true);
    expect(up.rs.requests()).toBe(0);
    expect(cache.stats().hits).toBe(10);
  });

  it("asks only for the runs of blocks it lacks, one request per run", async () => {
    const { cache } = await openCache();
    await cache.read(url(), 2 * BLOCK, 10);
    await cache.read(url(), 5 * BLOCK + 7, 10);
    await until(() => cache.stats().blocks === 2, "blocks 2 and 5 on disk");
    up.rs.resetCounts();
    expect(exact(await cache.read(url(), 0, 8 * BLOCK), 0, 8 * BLOCK)).toBe(true);
    expect([...up.rs.ranges].sort()).toEqual([range(0, 1), range(3, 4), range(6, 7)].sort());
  });

  it("never pulls a block twice: an overlapping read joins the blocks in flight and asks only for the rest", async () => {
    const { cache } = await openCache();
    const fired = up.wan.stats.faultsFired;
    up.wan.inject({ fault: { kind: "delay", ms: 200 }, times: 1, match: (_p, r) => r === range(0, 5) });
    const first = cache.read(url(), 0, 6 * BLOCK); // blocks 0..5
    await until(() => up.wan.stats.faultsFired > fired, "the first run to be held by the WAN");
    expect(up.rs.requests()).toBe(0);
    const second = cache.read(url(), 3 * BLOCK + 1, 7 * BLOCK - 2); // blocks 3..9
    const single = cache.read(url(), 4 * BLOCK + 9, 100); // inside the first run
    const [a, b, c] = await Promise.all([first, second, single]);
    expect(exact(a, 0, 6 * BLOCK)).toBe(true);
    expect(exact(b, 3 * BLOCK + 1, 7 * BLOCK - 2)).toBe(true);
    expect(exact(c, 4 * BLOCK + 9, 100)).toBe(true);
    expect([...up.rs.ranges].sort()).toEqual([range(0, 5), range(6, 9)].sort());
    expect(cache.stats().coalesced).toBe(4); // blocks 3, 4, 5 of the second read, block 4 of the third
  });

  it("caps one request at coalesceBytes", async () => {
    const { cache } = await openCache({ coalesceBytes: 4 * BLOCK });
    expect(exact(await cache.read(url(), 0, 10 * BLOCK), 0, 10 * BLOCK)).toBe(true);
    expect([...up.rs.ranges].sort()).toEqual([range(0, 3), range(4, 7), range(8, 9)].sort());
  });

  it("streams a long span with a request per stretch of its lookahead, not per block", async () => {
    const { cache } = await openCache({ coalesceBytes: 8 * BLOCK });
    const chunks: Buffer[] = [];
    for await (const chunk of cache.stream(url(), 10, data.length - 10)) chunks.push(Buffer.from(chunk));
    expect(Buffer.concat(chunks).equals(data.subarray(10))).toBe(true);
    expect(chunks).toHaveLength(41);
    // 41 blocks, at most 8 per request, refilled 4 at a time: 1 + ceil(33 / 4) requests, where a request per block made 41.
    expect(up.rs.requests()).toBeLessThanOrEqual(10);
    expect(up.rs.requests()).toBeGreaterThanOrEqual(Math.ceil(41 / 8));
    const starts = up.rs.ranges.map((r) => Number(/^bytes=(\d+)-/.exec(r)?.[1]));
    expect(starts.every((s) => s % BLOCK === 0)).toBe(true);
  });

  it("prefetches each planned span as one request, and the reads then need none", async () => {
    const { cache } = await openCache();
    const spans = [
      { path: PATH, offset: 2 * BLOCK + 500, length: 5 * BLOCK }, // blocks 2..7
      { path: OTHER, offset: 0, length: 3 * BLOCK + 1 }, // blocks 0..3
      { path: PATH, offset: 20 * BLOCK, length: 2 * BLOCK }, // blocks 20..21
    ];
    cache.plan(spans.map((s) => ({ url: url(s.path), offset: s.offset, length: s.length })));
    await until(() => cache.stats().plan.prefetchedBlocks >= 12, "the plan prefetched");
    expect([...up.rs.ranges].sort()).toEqual([range(2, 7), range(0, 3, other.length), range(20, 21)].sort());
    const misses = cache.stats().misses;
    for (const s of spans)
      expect(
        exact(await cache.read(url(s.path), s.offset, s.length), s.offset, s.length, s.path === PATH ? data : other),
      ).toBe(true);
    expect(cache.stats().misses).toBe(misses);
    expect(up.rs.requests()).toBe(3);
  });

  it("resumes a run cut mid-block from the stopping byte, with no block pulled twice", async () => {
    const { cache } = await openCache();
    const cut = 2 * BLOCK + 5000; // inside block 2 of the run 0..7
    up.wan.inject({ fault: { kind: "short", afterBytes: cut }, times: 1, match: (_p, r) => r === range(0, 7) });
    expect(exact(await cache.read(url(), 0, 8 * BLOCK), 0, 8 * BLOCK)).toBe(true);
    expect(up.rs.ranges).toEqual([range(0, 7), `bytes=${cut}-${8 * BLOCK - 1}`]);
    expect(cache.stats().retries).toBe(1);
  });

  it("keeps the blocks completed before a run fails for good, stores no torn block, and fails typed", async () => {
    const { cache, dir } = await openCache({ retries: 1 });
    const cut = 2 * BLOCK + 5000; // blocks 0 and 1 complete, block 2 part-way
    up.wan.inject({ fault: { kind: "short", afterBytes: cut }, times: 1, match: (_p, r) => r === range(0, 7) });
    up.wan.inject({ fault: { kind: "503" }, times: 100, match: (_p, r) => r === `bytes=${cut}-${8 * BLOCK - 1}` });
    await expect(cache.read(url(), 0, 8 * BLOCK)).rejects.toMatchObject({ code: "ERR_UPSTREAM_UNAVAILABLE" });
    await until(() => cache.stats().blocks === 2, "the two complete blocks on disk");
    up.wan.clearFaults();
    await cache.close();

    // A fresh cache over the same directory re-indexes only intact blocks: the two complete ones.
    const reopened = await openCache({}, dir);
    expect(reopened.cache.stats().blocks).toBe(2);
    expect(reopened.cache.stats().corruptBlocks).toBe(0);
    expect(await dirBytes(dir)).toBe(reopened.cache.stats().residentBytes);
    expect(exact(await reopened.cache.read(url(), 0, 2 * BLOCK), 0, 2 * BLOCK)).toBe(true);
    expect(up.rs.requests()).toBe(0);
    expect(exact(await reopened.cache.read(url(), 0, 8 * BLOCK), 0, 8 * BLOCK)).toBe(true);
    expect(up.rs.ranges).toEqual([range(2, 7)]);
  });

  it("serves the blocks of a run to a waiting reader before the run's last byte arrives", async () => {
    const { cache } = await openCache();
    // The run 0..7 stalls after block 1, then is cut and resumed; block 0's reader does not wait for that.
    const fired = up.wan.stats.faultsFired;
    up.wan.inject({
      fault: { kind: "stall", afterBytes: 2 * BLOCK, ms: 1500 },
      times: 1,
      match: (_p, r) => r === range(0, 7),
    });
    let settled = false;
    const whole = cache.read(url(), 0, 8 * BLOCK).finally(() => (settled = true));
    await until(() => up.wan.stats.faultsFired > fired, "the run to start");
    const head = await cache.read(url(), 10, 100);
    expect(exact(head, 10, 100)).toBe(true);
    expect(settled).toBe(false);
    expect(exact(await whole, 0, 8 * BLOCK)).toBe(true);
    expect(up.rs.ranges).toEqual([range(0, 7), `bytes=${2 * BLOCK}-${8 * BLOCK - 1}`]);
  });

  it("defaults to 16 KiB blocks for small stores and larger ones as the store grows, bounding the block count", async () => {
    const base = { upstreams: [up.wan.url], dir: "/tmp/unused" };
    const size = (maxBytes: number): number => resolveOptions({ ...base, maxBytes }).blockSize;
    expect(size(256 << 20)).toBe(16 << 10);
    expect(size(4 * 2 ** 30)).toBe(16 << 10);
    expect(size(16 * 2 ** 30)).toBe(64 << 10);
    expect(size(256 * 2 ** 30)).toBe(1 << 20);
    expect(size(2 ** 50)).toBe(8 << 20);
    for (const g of [1, 5, 16, 100, 256, 1000]) {
      const maxBytes = g * 2 ** 30;
      expect(maxBytes / (size(maxBytes) + 4096)).toBeLessThanOrEqual(DEFAULT_MAX_BLOCKS);
    }
    expect(resolveOptions({ ...base, maxBytes: 2 ** 40, blockSize: 4096 }).blockSize).toBe(4096);
    expect(() => resolveOptions({ ...base, maxBytes: 1, coalesceBytes: 0 })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }),
    );
    const d = await tempDir();
    cleanups.push(d.remove);
    const cache = await createRangeCache({
      upstreams: [up.wan.url],
      dir: d.path,
      maxBytes: 64 << 20,
      tls: { ca: up.wan.ca },
      logLevel: "silent",
    });
    cleanups.push(() => cache.close());
    expect(cache.stats().blockSize).toBe(16 << 10);
  });
});
