import { beforeAll, describe, expect, it } from "vitest";
import type { RangeCache, RangeCacheOptions } from "../../origin-cache/index.js";
import { startWanEmulator, type WanEmulator } from "../helpers/wan-emulator.js";
import { objectBytes, useUpstream } from "./fixtures.js";

const BLOCK = 256 << 10;
const PATH = "/v1/objects/f.mp4";
const data = objectBytes(4 * BLOCK + 999, "faults");
const up = useUpstream(
  { [PATH]: data },
  { rttMs: 1, blockSize: BLOCK, retryMinDelayMs: 5, retryMaxDelayMs: 50, bodyTimeoutMs: 400 },
);
const { cleanups } = up;

/** The upstream client the suite runs on: each guarantee below holds on every one of them. */
let client: "native" | "undici" = "undici";

async function openCache(front: WanEmulator = up.wan, over: Partial<RangeCacheOptions> = {}): Promise<RangeCache> {
  return (await up.openCache({ upstreamClient: client, ...over }, undefined, front)).cache;
}

const url = (front: WanEmulator = up.wan, path = PATH): string => `${front.url}${path}?sig=s`;

/** Ranges the origin saw that start inside a block rather than at its start: resumed pulls. */
const resumedRanges = (): number[] =>
  up.rs.ranges.map((r) => Number(/^bytes=(\d+)-/.exec(r)?.[1])).filter((start) => start % BLOCK !== 0);

// On undici (the default) and on the native client (libcurl in the addon, native-origin.ts).
for (const which of ["undici", "native"] as const)
  describe(`upstream faults are recovered with the same bytes or surfaced as typed errors (${which})`, () => {
    beforeAll(() => {
      client = which;
    });

    it("retries 503s", async () => {
      const cache = await openCache();
      up.wan.inject({ fault: { kind: "503" }, times: 2 });
      expect(Buffer.from(await cache.read(url(), 0, data.length)).equals(data)).toBe(true);
      expect(up.wan.stats.faultsFired).toBeGreaterThanOrEqual(2);
      expect(cache.stats().retries).toBeGreaterThanOrEqual(2);
      expect(Object.keys(cache.stats().upstreamClients)).toEqual([which]);
    });

    for (const [name, fault] of [
      ["a stream reset mid-body", { kind: "reset", afterBytes: 100_000, scope: "stream" }],
      ["a short body", { kind: "short", afterBytes: 70_000 }],
      ["a stall longer than the body timeout", { kind: "stall", afterBytes: 50_000, ms: 1500 }],
    ] as const) {
      it(`resumes after ${name} from the byte where it stopped`, async () => {
        const cache = await openCache();
        await cache.object(url());
        up.rs.resetCounts();
        // Blocks 0-2 are missing: one request for the run, cut part-way through block 0.
        up.wan.inject({ fault, times: 1, match: (_p, range) => range === `bytes=0-${3 * BLOCK - 1}` });
        const got = await cache.read(url(), BLOCK - 10, BLOCK + 20);
        expect(Buffer.from(got).equals(data.subarray(BLOCK - 10, 2 * BLOCK + 10))).toBe(true);
        const resumed = resumedRanges();
        expect(resumed).toHaveLength(1);
        expect(resumed[0]).toBeGreaterThan(0);
        expect(resumed[0]).toBeLessThanOrEqual(fault.afterBytes);
        expect(up.rs.ranges).toEqual([`bytes=0-${3 * BLOCK - 1}`, `bytes=${resumed[0]}-${3 * BLOCK - 1}`]);
        expect(cache.stats().retries).toBe(1);
      });
    }

    it("recovers every stream when the whole connection is reset", async () => {
      const cache = await openCache();
      await cache.object(url());
      up.wan.inject({ fault: { kind: "reset", afterBytes: 30_000, scope: "connection" }, times: 1 });
      const reads = await Promise.all(
        [0, 1, 2, 3, 4].map((b) => cache.read(url(), b * BLOCK, Math.min(BLOCK, data.length - b * BLOCK))),
      );
      reads.forEach((r, b) => expect(Buffer.from(r).equals(data.subarray(b * BLOCK, b * BLOCK + r.length))).toBe(true));
      expect(cache.stats().retries).toBeGreaterThanOrEqual(1);
    });

    it("hedges a range whose headers are slow, and the hedge's bytes are the same", async () => {
      const cache = await openCache(up.wan, { hedgeAfterMs: 100 });
      await cache.object(url());
      const range = `bytes=${2 * BLOCK}-${3 * BLOCK - 1}`;
      up.wan.inject({ fault: { kind: "delay", ms: 3000 }, times: 1, match: (_p, r) => r === range });
      const got = await cache.read(url(), 2 * BLOCK, BLOCK);
      expect(Buffer.from(got).equals(data.subarray(2 * BLOCK, 3 * BLOCK))).toBe(true);
      expect(cache.stats().hedges).toBe(1);
      expect(cache.stats().retries).toBe(0);
    });

    it("surfaces ERR_UPSTREAM_UNAVAILABLE when 503s outlast the retries", async () => {
      const cache = await openCache(up.wan, { retries: 2 });
      await cache.object(url());
      up.wan.inject({ fault: { kind: "503" }, times: 100 });
      await expect(cache.read(url(), 0, 10)).rejects.toMatchObject({
        code: "ERR_UPSTREAM_UNAVAILABLE",
        name: "UpstreamUnavailableError",
      });
    });

    it("surfaces ERR_ETAG_CHANGED when the ETag changes between requests, then serves the new version", async () => {
      const front = await startWanEmulator({ target: up.rs.url });
      cleanups.push(() => front.close());
      const cache = await openCache(front);
      const old = await cache.object(url(front));
      await cache.read(url(front), 0, 10);
      front.changeEtags();
      await expect(cache.read(url(front), 0, 2 * BLOCK)).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
      const pin = await cache.object(url(front));
      expect(pin.etag).not.toBe(old.etag);
      expect(Buffer.from(await cache.read(url(front), 0, 2 * BLOCK)).equals(data.subarray(0, 2 * BLOCK))).toBe(true);
    });

    it("never mixes bytes of two versions when the object is replaced mid-read", async () => {
      const path = "/v1/objects/replaced.mp4";
      const v1 = objectBytes(3 * BLOCK, "v1");
      const v2 = objectBytes(3 * BLOCK, "v2");
      up.rs.put(path, v1);
      const cache = await openCache();
      expect(Buffer.from(await cache.read(url(up.wan, path), 0, BLOCK)).equals(v1.subarray(0, BLOCK))).toBe(true);
      up.rs.put(path, v2);
      // Block 0 is cached from v1, blocks 1-2 would come from v2: the read fails instead of mixing.
      await expect(cache.read(url(up.wan, path), 0, 3 * BLOCK)).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
      expect(Buffer.from(await cache.read(url(up.wan, path), 0, 3 * BLOCK)).equals(v2)).toBe(true);
    });
  });
