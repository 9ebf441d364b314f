/**
 * The origin-cache's CPU per plan restatement on a warm cache: the SDK restates its whole window
 * (the clips ahead and the ones still in flight) every few clips, and warm every block of it is
 * stored already. Fills the cache with every span, then restates a sliding window `--restates`
 * times, `--step` clips further each time, a few ms apart (as a stream does), and reports the
 * cache's CPU and the blocks it ran the prefetch over, per restatement. In-process, no HTTP: the
 * plan's JSON and zod are outside what this counts.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/plan-restate.js [--clips 400] [--window 48] [--step 2] [--restates 150] [--rounds 3] [--json]
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { createRangeCache } from "../origin-cache/index.js";
import { startRangeServer } from "../test/helpers/range-server.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    clips: { type: "string", default: "400" },
    window: { type: "string", default: "48" },
    step: { type: "string", default: "2" },
    restates: { type: "string", default: "150" },
    rounds: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  },
});
const int = (flag: keyof typeof values): number => {
  const v = Number(values[flag]);
  if (!Number.isSafeInteger(v) || v < 1)
    throw new Error(`Expected a positive integer for --${flag} but received ${String(values[flag])}`);
  return v;
};
const CLIPS = int("clips");
const WINDOW = int("window");
const STEP = int("step");
const RESTATES = int("restates");
const ROUNDS = int("rounds");
const BLOCK = 16 << 10;
/** A clip's span as in the compare bench: ~141 KB of a GOP. */
const SPAN = 141_000;
const OBJECTS = 16;

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), "ec-bench-restate-"));
  const origin = await startRangeServer();
  const perObject = Math.ceil(CLIPS / OBJECTS);
  const urls: string[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    origin.put(`/v1/objects/r/${i}.mp4`, randomBytes(perObject * SPAN + BLOCK));
    urls.push(`${origin.url}/v1/objects/r/${i}.mp4?exp=9999999999&sig=bench`);
  }
  const clip = (c: number) => ({
    url: urls[c % OBJECTS] as string,
    offset: Math.floor(c / OBJECTS) * SPAN,
    length: SPAN,
  });
  const cache = await createRangeCache({
    upstreams: [origin.url],
    dir: join(work, "cache"),
    maxBytes: 2 * OBJECTS * (perObject * SPAN + 2 * BLOCK),
    blockSize: BLOCK,
    logLevel: "silent",
  });
  const rounds: { cpuUsPerRestate: number; blocksPerRestate: number }[] = [];
  try {
    for (let c = 0; c < CLIPS; c++) {
      const r = clip(c);
      await cache.read(r.url, r.offset, r.length);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const before = cache.stats().plan.prefetchedBlocks;
      const c0 = process.cpuUsage();
      for (let k = 0; k < RESTATES; k++) {
        const from = (k * STEP) % Math.max(1, CLIPS - WINDOW);
        cache.plan(
          Array.from({ length: WINDOW }, (_, j) => clip(from + j)),
          { client: "bench" },
        );
        await sleep(2);
      }
      const c = process.cpuUsage(c0);
      rounds.push({
        cpuUsPerRestate: Math.round((c.user + c.system) / RESTATES),
        blocksPerRestate: Math.round((cache.stats().plan.prefetchedBlocks - before) / RESTATES),
      });
      cache.plan([], { client: "bench" });
    }
  } finally {
    await cache.close();
    await origin.close();
    await rm(work, { recursive: true, force: true });
  }
  const out = {
    clips: CLIPS,
    window: WINDOW,
    step: STEP,
    restates: RESTATES,
    rounds,
    median_cpu_us_per_restate: median(rounds.map((r) => r.cpuUsPerRestate)),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(out)}\n`);
  else
    for (const r of rounds)
      process.stdout.write(`${r.cpuUsPerRestate} µs CPU, ${r.blocksPerRestate} blocks prefetched per restatement\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
