/**
 * The cache side of the transport bench, run as its own process on the client CPU set: an
 * in-process origin-cache pulls the warm-up ranges (not measured: start-up and the JIT's first
 * compiles), then the measured ranges, `concurrency` reads at a time, each read into a buffer
 * its reader reuses; the measure ends once every block is stored (CRC'd and written to the
 * slabs), so it holds what ingest costs, not only the receive. Prints one JSON line (PullResult).
 *
 *   node dist/bench/transport/cache-pull.js '<json of CachePullJob>'
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRangeCache } from "../../origin-cache/index.js";
import type { PullRange, PullResult } from "./ranges.js";

export interface CachePullJob {
  readonly upstream: string;
  readonly ca: string;
  readonly blockSize: number;
  readonly concurrency: number;
  /** "read": each range one `read()` (one upstream request each, as curl's); "plan": all of them as one plan, prefetched. */
  readonly mode: "read" | "plan";
  /** The cache's HTTP/2 client (`upstreamClient`): the side "cache" runs undici (the default), "cache-h2" node-http2, "cache-native" native. */
  readonly client: "native" | "node-http2" | "undici";
  readonly warmup: readonly PullRange[];
  readonly ranges: readonly PullRange[];
}

const job = JSON.parse(process.argv[2] ?? "null") as CachePullJob;
if (!job?.upstream) throw new Error("Expected a CachePullJob as JSON in the first argument");

const blocksOf = (ranges: readonly PullRange[]): number =>
  ranges.reduce(
    (n, r) => n + Math.ceil((r.offset + r.length) / job.blockSize) - Math.floor(r.offset / job.blockSize),
    0,
  );

const dir = await mkdtemp(join(tmpdir(), "ec-bench-transport-"));
const all = [...job.warmup, ...job.ranges];
const cache = await createRangeCache({
  upstreams: [job.upstream],
  dir: join(dir, "cache"),
  maxBytes: 2 * blocksOf(all) * job.blockSize + (64 << 20),
  blockSize: job.blockSize,
  tls: { ca: job.ca },
  upstreamClient: job.client,
  logLevel: "silent",
});

async function storedAtLeast(blocks: number): Promise<void> {
  for (const deadline = Date.now() + 120_000; cache.stats().blocks < blocks; ) {
    if (Date.now() > deadline)
      throw new Error(`Expected ${blocks} blocks stored but the cache holds ${cache.stats().blocks}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * CPU seconds of this process's main thread, of the native upstream client's thread
 * ("ec-range-client", libcurl) and of the rest (libuv pool, V8's compiler and GC threads).
 */
function threadCpu(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const name = Number(tid) === process.pid ? "main" : comm === "ec-range-client" ? "curl" : "others";
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out[name] = (out[name] ?? 0) + (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

const buffers = Array.from({ length: job.concurrency }, () =>
  Buffer.allocUnsafeSlow(Math.max(...all.map((r) => r.length))),
);
async function pull(ranges: readonly PullRange[]): Promise<number> {
  const url = (r: PullRange): string => `${job.upstream}${r.path}`;
  if (job.mode === "plan") {
    cache.plan(ranges.map((r) => ({ url: url(r), offset: r.offset, length: r.length })));
    return ranges.reduce((n, r) => n + r.length, 0);
  }
  let next = 0;
  let bytes = 0;
  await Promise.all(
    buffers.map(async (into) => {
      while (next < ranges.length) {
        const r = ranges[next++] as PullRange;
        const got = await cache.read(url(r), r.offset, r.length, { into });
        bytes += got.length;
      }
    }),
  );
  return bytes;
}

try {
  await pull(job.warmup);
  await storedAtLeast(blocksOf(job.warmup));
  const before = cache.stats();
  const th0 = threadCpu();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await pull(job.ranges);
  await storedAtLeast(blocksOf(all));
  const seconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const after = cache.stats();
  const th1 = threadCpu();
  const threads = Object.fromEntries(
    Object.entries(th1).map(([name, s]) => [name, Math.round((s - (th0[name] ?? 0)) * 100) / 100]),
  );
  const result: PullResult = {
    bytes: after.bytesFromUpstream - before.bytesFromUpstream,
    seconds,
    cpuSeconds: (c.user + c.system) / 1e6,
    requests: after.upstreamRequests - before.upstreamRequests,
  };
  process.stdout.write(
    `${JSON.stringify({ ...result, httpVersions: after.httpVersions, upstreamClients: after.upstreamClients, retries: after.retries, threads })}\n`,
  );
} finally {
  await cache.close();
  await rm(dir, { recursive: true, force: true });
}
