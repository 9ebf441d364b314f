/**
 * Reused batch memory against a fresh buffer per batch: the same epoch of local files read as a
 * training loop reads it (every batch's `frames` tensor touched), once keeping each batch
 * (fresh memory each time, the path before the pool) and once calling `batch.release()` after
 * each step. Rows alternate (fresh, reused, fresh, reused, …) on a noisy machine; the figure is
 * main-thread plus decoder-thread CPU per frame of the process, and the ratio reused / fresh.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/batch-memory.js [--videos 4] [--frames 300]
 *       [--size 640x360] [--gop 30] [--clip 16] [--batch 8] [--pairs 3] [--json]
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { open } from "../sdk/index.js";
import { makeBenchVideos } from "./stream-common.js";

const { values } = parseArgs({
  options: {
    videos: { type: "string", default: "4" },
    frames: { type: "string", default: "300" },
    size: { type: "string", default: "640x360" },
    gop: { type: "string", default: "30" },
    clip: { type: "string", default: "16" },
    batch: { type: "string", default: "8" },
    pairs: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  },
});
const [width, height] = values.size.split("x").map(Number) as [number, number];

interface Row {
  frames: number;
  cpuMsPerFrame: number;
  gcMs: number;
}

/** GC pause time of this process so far, from the performance timeline. */
async function gcObserver(): Promise<{ ms: () => number; stop: () => void }> {
  const { PerformanceObserver } = await import("node:perf_hooks");
  let total = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) total += e.duration;
  });
  obs.observe({ entryTypes: ["gc"] });
  return { ms: () => total, stop: () => obs.disconnect() };
}

async function row(dir: string, release: boolean): Promise<Row> {
  const ds = await open(dir, {
    device: "cpu",
    frames: Number(values.clip),
    batch: Number(values.batch),
    align: "exact",
    seed: 1,
  });
  const gc = await gcObserver();
  const cpu0 = process.cpuUsage();
  let sum = 0;
  try {
    for await (const b of ds) {
      const data = b.frames.data as Uint8Array;
      // A step reads the batch (as a copy to a device would); one byte a page stands for it.
      for (let i = 0; i < data.length; i += 4096) sum += data[i]!;
      if (release) b.release();
    }
  } finally {
    await ds.close();
  }
  const used = process.cpuUsage(cpu0);
  await new Promise((r) => setTimeout(r, 0));
  gc.stop();
  const frames = ds.stats().frames;
  if (sum < 0) throw new Error("unreachable");
  return { frames, cpuMsPerFrame: (used.user + used.system) / 1000 / frames, gcMs: gc.ms() };
}

const root = await mkdtemp(join(tmpdir(), "ec-bench-batch-memory-"));
try {
  const dir = join(root, "videos");
  await mkdir(dir);
  await makeBenchVideos(dir, {
    videos: Number(values.videos),
    frames: Number(values.frames),
    gop: Number(values.gop),
    width,
    height,
  });
  const fresh: Row[] = [];
  const reused: Row[] = [];
  await row(dir, true); // warm-up: code paths compiled, files in the page cache
  for (let p = 0; p < Number(values.pairs); p++) {
    fresh.push(await row(dir, false));
    reused.push(await row(dir, true));
  }
  const mean = (rows: Row[], k: keyof Row) => rows.reduce((a, r) => a + r[k], 0) / rows.length;
  const result = {
    frames_per_row: fresh[0]!.frames,
    fresh_cpu_ms_per_frame: mean(fresh, "cpuMsPerFrame"),
    reused_cpu_ms_per_frame: mean(reused, "cpuMsPerFrame"),
    reused_vs_fresh: mean(reused, "cpuMsPerFrame") / mean(fresh, "cpuMsPerFrame"),
    fresh_gc_ms: mean(fresh, "gcMs"),
    reused_gc_ms: mean(reused, "gcMs"),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else
    for (const [k, v] of Object.entries(result))
      process.stdout.write(`${k.padEnd(26)} ${typeof v === "number" ? v.toFixed(3) : v}\n`);
} finally {
  await rm(root, { recursive: true, force: true });
}
