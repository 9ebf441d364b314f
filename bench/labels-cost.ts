/**
 * Labeling cost against decode on CPU, one core each (workers 1, one decode thread), in
 * alternating rounds on the same files:
 * - decode: open() over local files without labels, wall time per frame;
 * - label: every built-in (no cache) over clips kept from that decode, back to back, per frame;
 * - label_fraction = label / decode (target ≤ 0.10);
 * - pipeline_overhead: open() with the labeling stage against without (noisier: wall time).
 * For the decoder's native planes (luma read in place) and rgb24 resized to a training size.
 *
 *   npx tsc -p bench/labels.tsconfig.json && node dist/bench/labels-cost.js [--size 1280x720] [--frames 300]
 *       [--files 2] [--rounds 3] [--train 224x224] [--json]
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { performance } from "node:perf_hooks";
import { open } from "../sdk/index.js";
import { createLabelStage } from "../sdk/labels/index.js";
import { median } from "./stats.js";

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1280x720" },
    frames: { type: "string", default: "300" },
    files: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    train: { type: "string", default: "224x224" },
    json: { type: "boolean", default: false },
  },
});
const [width, height] = values.size.split("x").map(Number) as [number, number];
const [trainH, trainW] = values.train.split("x").map(Number) as [number, number];
const frames = Number(values.frames);
const rounds = Number(values.rounds);

interface Sample {
  wall: number;
  clips: number;
  frames: number;
  kept: unknown[];
}

/** Streams every clip; keeps the first `keep` decoded clips for the labeling measurement. */
async function pass(dir: string, format: "native" | "rgb24", hooks: object, keep = 0): Promise<Sample> {
  const size = format === "rgb24" ? ([trainH, trainW] as [number, number]) : undefined;
  const t0 = performance.now();
  const ds = await open(dir, {
    frames: 16,
    shuffle: false,
    device: "cpu",
    workers: 1,
    prefetch: 4,
    format,
    ...(size ? { size } : {}),
    ...hooks,
  });
  let clips = 0;
  const kept: unknown[] = [];
  for await (const b of ds) {
    clips += b.clips.length;
    for (const d of b.decoded) if (kept.length < keep) kept.push(d);
  }
  await ds.close();
  return { wall: performance.now() - t0, clips, frames: clips * 16, kept };
}

/** Labels the kept clips back to back (nothing else running): CPU time per frame in ms. */
async function labelPerFrame(clips: unknown[], repeat: number): Promise<number> {
  const stage = createLabelStage({ cache: false, filter: "tag" });
  const info = { key: "bench.mp4", start: 0, frames: 16, stride: 1 };
  for (const c of clips) await stage.label(info, c); // warm-up
  const t0 = performance.now();
  for (let r = 0; r < repeat; r++) for (const c of clips) await stage.label(info, c);
  return (performance.now() - t0) / (repeat * clips.length * 16);
}

const dir = await mkdtemp(join(tmpdir(), "ec-bench-labels-"));
try {
  for (let i = 0; i < Number(values.files); i++) {
    await run("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      `testsrc2=size=${width}x${height}:rate=30`,
      "-frames:v",
      String(frames),
      "-pix_fmt",
      "yuv420p",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-bf",
      "2",
      "-g",
      "32",
      join(dir, `v${i}.mp4`),
    ]);
  }
  const results: Record<string, unknown>[] = [];
  for (const format of ["native", "rgb24"] as const) {
    const stage = createLabelStage({ cache: false, filter: "tag" });
    await pass(dir, format, {}); // warm-up: decoder pool, page cache, JIT
    const decodeMs: number[] = [];
    const labeledMs: number[] = [];
    const labelMs: number[] = [];
    let last: Sample | undefined;
    for (let r = 0; r < rounds; r++) {
      last = await pass(dir, format, {}, 4);
      decodeMs.push(last.wall / last.frames);
      labelMs.push(await labelPerFrame(last.kept, 5));
      const labeled = await pass(dir, format, stage.hooks);
      labeledMs.push(labeled.wall / labeled.frames);
    }
    const decode = median(decodeMs);
    const label = median(labelMs);
    const labeled = median(labeledMs);
    results.push({
      frames: format === "native" ? `native ${width}x${height}` : `rgb24 ${trainH}x${trainW}`,
      clips: last!.clips,
      decode_ms_per_frame: Number(decode.toFixed(3)),
      label_ms_per_frame: Number(label.toFixed(3)),
      label_fraction: Number((label / decode).toFixed(4)),
      pipeline_ms_per_frame: Number(labeled.toFixed(3)),
      pipeline_overhead: Number(((labeled - decode) / decode).toFixed(4)),
    });
  }
  if (values.json) process.stdout.write(`${JSON.stringify(results)}\n`);
  else console.table(results);
} finally {
  await rm(dir, { recursive: true, force: true });
}
