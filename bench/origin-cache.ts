/**
 * Origin cache throughput, ratios in one run:
 *  - cold: the cache pulls objects through the WAN emulator (TLS + HTTP/2, RTT, bandwidth cap)
 *    from an in-memory range origin, reading in order while the plan prefetches ahead;
 *    throughput against the link cap (target ≥ 0.9).
 *  - warm: the same random ranges read again from the cache, side by side with reading them
 *    from a local file holding the same bytes (target ≥ 0.9), in wall time and in CPU per read:
 *    once with a new buffer per read on both sides, once with each reader reusing its buffer
 *    (`read(..., { into })` against `FileHandle.read(buf)`); also through GET /v1/fetch. A first
 *    round warms both sides up and is not counted; before each measured part the heap is
 *    collected, and which side goes first alternates, so neither pays for the other's garbage.
 *    A round repeats passes of the `--reads` reads, the two sides interleaved (order alternating),
 *    until `--round-ms` has passed (default 2000; 0 for one pass each, as before 2026-12-01 21:00),
 *    so that neither one collector or scheduler pause of 10–50 ms nor a burst of the machine's load
 *    decides a round; each side's MB/s is its bytes over its own passes' time, its CPU per pass.
 * Reports upstream requests in flight (cache and emulator views) and the HTTP version used.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/origin-cache.js [--mib 256] [--objects 4] [--rtt-ms 50] [--mbps 400] [--reads 512] [--range-kib 1024] [--concurrency 16] [--block-mib 8] [--rounds 3] [--round-ms 2000] [--json]
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Agent, Pool, request } from "undici";
import { createRangeCache, startCache } from "../origin-cache/index.js";
import { startRangeServer } from "../test/helpers/range-server.js";
import { startWanEmulator } from "../test/helpers/wan-emulator.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "256" },
    objects: { type: "string", default: "4" },
    "rtt-ms": { type: "string", default: "50" },
    mbps: { type: "string", default: "400" },
    reads: { type: "string", default: "512" },
    "range-kib": { type: "string", default: "1024" },
    concurrency: { type: "string", default: "16" },
    "block-mib": { type: "string", default: "8" },
    rounds: { type: "string", default: "3" },
    "round-ms": { type: "string", default: "2000" },
    json: { type: "boolean", default: false },
  },
});
const TOTAL = Number(values.mib) * 2 ** 20;
const OBJECTS = Number(values.objects);
const RTT = Number(values["rtt-ms"]);
const CAP = (Number(values.mbps) * 1e6) / 8;
const READS = Number(values.reads);
const SPAN = Number(values["range-kib"]) * 1024;
const CONCURRENCY = Number(values.concurrency);
const BLOCK = Number(values["block-mib"]) * 2 ** 20;
const ROUNDS = Number(values.rounds);
const ROUND_MS = Number(values["round-ms"]);
if (!Number.isFinite(ROUND_MS) || ROUND_MS < 0)
  throw new Error(`Expected a non-negative number for --round-ms but received ${values["round-ms"]}`);
for (const [flag, v] of Object.entries({ objects: OBJECTS, reads: READS, concurrency: CONCURRENCY, rounds: ROUNDS }))
  if (!Number.isSafeInteger(v) || v < 1)
    throw new Error(`Expected a positive integer for --${flag} but received ${values[flag as keyof typeof values]}`);
for (const [flag, v] of Object.entries({
  mib: TOTAL,
  "rtt-ms": RTT + 1,
  mbps: CAP,
  "range-kib": SPAN,
  "block-mib": BLOCK,
}))
  if (!(v > 0))
    throw new Error(`Expected a positive number for --${flag} but received ${values[flag as keyof typeof values]}`);
// Each warm read is a whole span inside one object.
if (SPAN > Math.floor(TOTAL / OBJECTS))
  throw new Error(
    `Expected --range-kib at most the size of an object (${Math.floor(TOTAL / OBJECTS / 1024)} KiB: --mib over --objects) but received ${values["range-kib"]}`,
  );
const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
// A full collection between measured parts, without asking for node --expose-gc.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** `fn` over `items`, `n` at a time; `worker` (0…n-1) says which of the n runs it. */
async function pool<T>(items: readonly T[], n: number, fn: (item: T, worker: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async (_, worker) => {
      while (next < items.length) await fn(items[next++] as T, worker);
    }),
  );
}

/** Bytes, wall time and CPU (user + system, every thread of this process) of `fn`. */
async function timed(
  fn: () => Promise<number>,
): Promise<{ bytes: number; seconds: number; mbs: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const bytes = await fn();
  const seconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { bytes, seconds, mbs: bytes / seconds / 1e6, cpuMs: (c.user + c.system) / 1000 };
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), "ec-bench-cache-"));
  const origin = await startRangeServer();
  const wan = await startWanEmulator({ target: origin.url, rttMs: RTT, bandwidthBytesPerSec: CAP });
  const size = Math.floor(TOTAL / OBJECTS);
  const objects: { url: string; local: string }[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    const data = randomBytes(size);
    origin.put(`/v1/objects/bench/${i}.mp4`, data);
    const local = join(work, `${i}.mp4`);
    await writeFile(local, data);
    objects.push({ url: `${wan.url}/v1/objects/bench/${i}.mp4?exp=9999999999&sig=bench`, local });
  }
  // One cache directory: the range cache fills it, then the HTTP service reads it warm.
  const cacheOptions = {
    upstreams: [wan.url],
    dir: join(work, "cache"),
    // Room for every block twice over: a block takes a whole slot even when its object ends early.
    maxBytes: 2 * OBJECTS * Math.ceil(size / BLOCK) * BLOCK,
    blockSize: BLOCK,
    tls: { ca: wan.ca },
    logLevel: "silent",
  } as const;
  const cache = await createRangeCache(cacheOptions);
  try {
    // What this process can pull through the emulator at all: plain undici over HTTP/2, the
    // same bytes in block-sized ranges, all in flight at once. On a loaded machine the emulator
    // and TLS compete for CPU, and this shows it.
    const raw = new Pool(wan.url, { allowH2: true, connections: 1, pipelining: 100, connect: { ca: wan.ca } });
    const direct = await timed(async () => {
      const jobs = objects.flatMap((o) => Array.from({ length: Math.ceil(size / BLOCK) }, (_, b) => ({ o, b })));
      let n = 0;
      await Promise.all(
        jobs.map(async ({ o, b }) => {
          const end = Math.min(size, (b + 1) * BLOCK) - 1;
          const res = await raw.request({
            path: new URL(o.url).pathname + new URL(o.url).search,
            method: "GET",
            headers: { range: `bytes=${b * BLOCK}-${end}` },
          });
          for await (const chunk of res.body) n += (chunk as Buffer).length;
        }),
      );
      return n;
    });
    await raw.close();
    log(
      `cold pull of ${values.mib} MiB in ${OBJECTS} objects through ${RTT} ms RTT and ${values.mbps} Mbit/s (${(CAP / 1e6).toFixed(1)} MB/s)`,
    );
    const cold = await timed(async () => {
      cache.plan(objects.map((o) => ({ url: o.url, offset: 0, length: size })));
      let n = 0;
      for (const o of objects) for await (const chunk of cache.stream(o.url, 0, size)) n += chunk.length;
      return n;
    });
    const afterCold = cache.stats();
    // A warm epoch comes later: let the last block writes land first.
    const blocks = OBJECTS * Math.ceil(size / BLOCK);
    for (const deadline = Date.now() + 30_000; cache.stats().blocks < blocks; ) {
      if (Date.now() > deadline)
        throw new Error(
          `Expected ${blocks} blocks stored after the cold pull but the cache holds ${cache.stats().blocks}`,
        );
      await new Promise((r) => setTimeout(r, 10));
    }

    let s = 12345;
    const ranges = Array.from({ length: READS }, () => {
      s = (s * 1103515245 + 12345) >>> 0;
      const o = s % OBJECTS;
      s = (s * 1103515245 + 12345) >>> 0;
      return { o, offset: s % (size - SPAN + 1) };
    });
    const handles = await Promise.all(objects.map((o) => open(o.local, "r")));
    // Each of the CONCURRENCY readers has its own buffer for the reads into reused buffers.
    const buffers = Array.from({ length: CONCURRENCY }, () => Buffer.allocUnsafeSlow(SPAN));
    type Span = (typeof ranges)[number];
    // One pass: every range once, CONCURRENCY at a time.
    const reads = (one: (r: Span, into: Buffer | undefined) => Promise<number>, reuse: boolean) =>
      timed(async () => {
        let n = 0;
        await pool(ranges, CONCURRENCY, async (r, worker) => {
          const got = await one(r, reuse ? buffers[worker] : undefined);
          n += got;
        });
        return n;
      });
    const file = (h: number) => handles[h] as Awaited<ReturnType<typeof open>>;
    const fileRead = (reuse: boolean) =>
      reads(
        async (r, into) => (await file(r.o).read(into ?? Buffer.allocUnsafe(SPAN), 0, SPAN, r.offset)).bytesRead,
        reuse,
      );
    const url = (o: number) => (objects[o] as { url: string }).url;
    const cacheRead = (reuse: boolean) =>
      reads(async (r, into) => (await cache.read(url(r.o), r.offset, SPAN, into ? { into } : {})).length, reuse);
    /** MB/s of each side and its CPU ms per pass of READS reads; passes: how many the round took. */
    type Round = {
      file: number;
      cache: number;
      fileCpuMs: number;
      cacheCpuMs: number;
      filePasses: number;
      cachePasses: number;
    };
    const warm: Round[] = [];
    const warmReused: Round[] = [];
    // Round -1 warms both sides up (JIT, first touches) and is not counted. Each side starts with
    // the other's garbage collected, and the order alternates, so neither pays for the other.
    for (let round = -1; round < ROUNDS; round++) {
      for (const reuse of [false, true]) {
        // Passes of the two sides interleaved (the order alternating) until ROUND_MS has passed, so
        // a pause or a burst of the machine's load falls on both sides alike, not on one's round.
        const acc = {
          file: { bytes: 0, seconds: 0, cpuMs: 0, passes: 0 },
          cache: { bytes: 0, seconds: 0, cpuMs: 0, passes: 0 },
        };
        const t0 = performance.now();
        for (let i = 0; i === 0 || performance.now() - t0 < ROUND_MS; i++) {
          for (const side of (round + i) % 2 === 0 ? (["file", "cache"] as const) : (["cache", "file"] as const)) {
            gc();
            const t = await (side === "file" ? fileRead(reuse) : cacheRead(reuse));
            const a = acc[side];
            a.bytes += t.bytes;
            a.seconds += t.seconds;
            a.cpuMs += t.cpuMs;
            a.passes++;
          }
        }
        const side = (a: (typeof acc)["file"]) => ({
          mbs: a.bytes / a.seconds / 1e6,
          cpuMs: a.cpuMs / a.passes,
          passes: a.passes,
        });
        const pair = { file: side(acc.file), cache: side(acc.cache) };
        const { file, cache: cached } = pair as Required<typeof pair>;
        if (process.env.EC_BENCH_DEBUG)
          log(
            `round ${round}${reuse ? " (reused buffers)" : ""}: file ${JSON.stringify(file)} cache ${JSON.stringify(cached)}`,
          );
        if (round >= 0)
          (reuse ? warmReused : warm).push({
            file: file.mbs,
            cache: cached.mbs,
            fileCpuMs: file.cpuMs,
            cacheCpuMs: cached.cpuMs,
            filePasses: file.passes,
            cachePasses: cached.passes,
          });
      }
    }
    for (const h of handles) await h.close();
    log(
      `warm phase: ${JSON.stringify((({ hits, misses, bytesFromDisk, bytesFromMemory, blocks }) => ({ hits, misses, bytesFromDisk, bytesFromMemory, blocks }))(cache.stats()))}`,
    );

    // The same ranges through the HTTP service (a second cache over the same, now warm, directory).
    await cache.close();
    const svc = await startCache(cacheOptions);
    const agent = new Agent({ connections: CONCURRENCY });
    const httpWarm = await timed(async () => {
      let n = 0;
      await pool(ranges, CONCURRENCY, async (r) => {
        const u = `${svc.url}/v1/fetch?url=${encodeURIComponent((objects[r.o] as { url: string }).url)}`;
        const res = await request(u, {
          dispatcher: agent,
          headers: { range: `bytes=${r.offset}-${r.offset + SPAN - 1}` },
        });
        const body = await res.body.arrayBuffer();
        n += body.byteLength;
      });
      return n;
    });
    const httpStats = svc.stats();
    await agent.close();
    await svc.close();

    // CPU per read suffers less than wall time from other processes on a shared machine.
    const summary = (rounds: Round[]) => {
      const ratios = rounds.map((w) => w.cache / w.file);
      const fileMBs = median(rounds.map((w) => w.file));
      const cacheMBs = median(rounds.map((w) => w.cache));
      return {
        cacheMBs,
        fileMBs,
        ratio: cacheMBs / fileMBs,
        pairedRatio: median(ratios),
        minRatio: Math.min(...ratios),
        roundsAtTarget: ratios.filter((r) => r >= 0.9).length,
        roundRatios: ratios,
        cpuPerRead: {
          cacheUs: (median(rounds.map((w) => w.cacheCpuMs)) * 1000) / READS,
          fileUs: (median(rounds.map((w) => w.fileCpuMs)) * 1000) / READS,
        },
        rounds,
      };
    };
    const fresh = summary(warm);
    const reused = summary(warmReused);
    const result = {
      config: {
        mib: Number(values.mib),
        objects: OBJECTS,
        rttMs: RTT,
        capMBs: CAP / 1e6,
        blockMiB: BLOCK / 2 ** 20,
        reads: READS,
        rangeKiB: SPAN / 1024,
        concurrency: CONCURRENCY,
        roundMs: ROUND_MS,
      },
      cold: {
        MBs: cold.mbs,
        seconds: cold.seconds,
        ratioToCap: cold.mbs / (CAP / 1e6),
        plainH2MBs: direct.mbs,
        ratioToPlainH2: cold.mbs / direct.mbs,
        cpuMsPerBlock: cold.cpuMs / blocks,
      },
      warm: fresh,
      warmReused: reused,
      warmHttp: { MBs: httpWarm.mbs, ratioToFile: httpWarm.mbs / fresh.fileMBs, misses: httpStats.misses },
      upstream: {
        httpVersions: afterCold.httpVersions,
        peakInFlightCache: afterCold.peakInFlight,
        peakInFlightAtEmulator: wan.stats.peakInFlight,
        requests: afterCold.upstreamRequests,
        sessions: wan.stats.sessions,
        blockLatencyMs: afterCold.upstreamLatencyMs,
      },
    };
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      const f = (x: number): string => x.toFixed(2);
      process.stdout.write(
        [
          `cold pull     ${f(cold.mbs)} MB/s of a ${f(CAP / 1e6)} MB/s cap → ratio ${f(result.cold.ratioToCap)} (target ≥ 0.90)`,
          `              plain undici HTTP/2 pull of the same bytes ${f(direct.mbs)} MB/s → cache/plain ${f(result.cold.ratioToPlainH2)}`,
          `cold CPU      ${f(result.cold.cpuMsPerBlock)} ms per ${BLOCK / 2 ** 20} MiB block (this whole process: cache, emulator, origin, TLS on both ends)`,
          ...[
            ["warm reads   ", "a new buffer per read", fresh] as const,
            ["warm reused  ", "each reader reusing its buffer", reused] as const,
          ].flatMap(([label, how, w]) => [
            `${label} cache ${f(w.cacheMBs)} MB/s vs local file ${f(w.fileMBs)} MB/s (${how}) → ratio ${f(w.ratio)} (target ≥ 0.90); per-round ratios: median ${f(w.pairedRatio)}, lowest ${f(w.minRatio)}, ${w.roundsAtTarget} of ${ROUNDS} rounds ≥ 0.90 (${w.roundRatios.map(f).join(" ")}; ${median(w.rounds.map((r) => r.cachePasses))} passes a round)`,
            `              CPU cache ${f(w.cpuPerRead.cacheUs)} µs vs local file ${f(w.cpuPerRead.fileUs)} µs per ${SPAN / 1024} KiB read → ${f(w.cpuPerRead.cacheUs / w.cpuPerRead.fileUs)} ×`,
          ]),
          `warm via HTTP ${f(httpWarm.mbs)} MB/s → ratio to local file ${f(result.warmHttp.ratioToFile)}`,
          `upstream      ${JSON.stringify(afterCold.httpVersions)}; peak in flight ${afterCold.peakInFlight} (emulator saw ${wan.stats.peakInFlight}); ${afterCold.upstreamRequests} requests on ${wan.stats.sessions} connection(s); block p50 ${f(afterCold.upstreamLatencyMs.p50)} ms`,
        ].join("\n") + "\n",
      );
    }
  } finally {
    await cache.close();
    await wan.close();
    await origin.close();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
