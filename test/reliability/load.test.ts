/**
 * Hundreds of concurrent range readers against the real local edge and against an origin-cache
 * in front of it (loopback, bounded in count): no error, no wrong byte, memory bounded. The
 * figures (requests/s, p50/p99) are reported, never asserted.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OBJECTS_ROUTE, signedUrl } from "../../common/sign.js";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import { percentile, report, scale, startStack, type Stack } from "./stack.js";

const SIZE = 6 << 20;
const data = randomBytes(SIZE);
const concurrency = scale(200, 400);
const total = scale(1200, 4000);
let stack: Stack;
let cache: CacheService;
let cacheDir: string;
let url: string;

beforeAll(async () => {
  stack = await startStack({});
  expect(await stack.put("load/blob.bin", data)).toBe(201);
  url = await signedUrl(
    stack.edge.url,
    OBJECTS_ROUTE,
    "load/blob.bin",
    Math.floor(Date.now() / 1000) + 3600,
    stack.edge.signingKey,
  );
  cacheDir = await mkdtemp(join(tmpdir(), "ec-rel-load-"));
  // Smaller than the object: the load also evicts and re-pulls.
  cache = await startCache({
    upstreams: [stack.edge.url],
    dir: cacheDir,
    maxBytes: 4 << 20,
    blockSize: 256 << 10,
    logLevel: "silent",
  });
}, 240_000);

afterAll(async () => {
  await cache?.close();
  await stack?.close();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
});

/** `total` random ranges, `concurrency` in flight, every body compared with the source bytes. */
async function hammer(
  target: (start: number, end: number) => { url: string; headers: Record<string, string> },
): Promise<Record<string, number>> {
  const agent = new Agent({ connections: concurrency, pipelining: 1 });
  const latencies: number[] = [];
  let wrong = 0;
  let failed = 0;
  let next = 0;
  let peakRss = process.memoryUsage().rss;
  const rss0 = peakRss;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < total) {
      const i = next++;
      const start = (i * 7919 * 4099) % (SIZE - 1);
      const end = Math.min(SIZE - 1, start + 1 + ((i * 104729) % (64 << 10)));
      const t = target(start, end);
      const begin = performance.now();
      try {
        const res = await request(t.url, {
          dispatcher: agent,
          headers: { ...t.headers, range: `bytes=${start}-${end}` },
        });
        const body = Buffer.from(await res.body.arrayBuffer());
        latencies.push(performance.now() - begin);
        if (res.statusCode !== 206 || !body.equals(data.subarray(start, end + 1))) wrong++;
      } catch {
        failed++;
      }
      if (i % 64 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  await agent.close();
  return {
    requests: total,
    concurrency,
    wrong,
    failed,
    rps: Math.round(total / seconds),
    p50_ms: Math.round(percentile(latencies, 50)),
    p99_ms: Math.round(percentile(latencies, 99)),
    rss_growth_mib: Math.round((peakRss - rss0) / 2 ** 20),
  };
}

describe("load: concurrent range readers", () => {
  it("against the local edge: every byte right, no error", async () => {
    const u = new URL(url);
    const figures = await hammer(() => ({ url: u.href, headers: {} }));
    report("load-edge", figures);
    expect(figures.failed).toBe(0);
    expect(figures.wrong).toBe(0);
  }, 300_000);

  it("against an origin-cache smaller than the object: every byte right, no error, memory bounded", async () => {
    const figures = await hammer(() => ({ url: `${cache.url}/v1/fetch?url=${encodeURIComponent(url)}`, headers: {} }));
    report("load-origin-cache", { ...figures, cache_bytes: cache.cache.stats().residentBytes });
    expect(figures.failed).toBe(0);
    expect(figures.wrong).toBe(0);
    // In-flight bodies are at most concurrency × 64 KiB plus the blocks being pulled; 256 MiB is far above.
    expect(figures.rss_growth_mib).toBeLessThan(256);
  });
});
