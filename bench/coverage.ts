/**
 * Every frame usable, each decoded once: on videos with long GOPs (300 frames by default), one
 * epoch of exact-aligned clips cut from GOP runs against today's keyframe-aligned clips, side by
 * side in one run, from local files on the CPU decoder:
 *  - coverage: frames delivered per epoch over the frames in the videos (target ≥ 0.95);
 *  - decoded_frames / frames delivered (target ≤ 1.15);
 *  - clips/s of the exact epoch over keyframe-aligned clips/s (target ≥ 0.9);
 *  - the shuffle's scatter: distinct GOPs per batch and how far apart a GOP's clips land.
 * After an uncounted warm-up of both paths, rows alternate (exact, keyframe, exact, keyframe) on a
 * noisy machine; the keyframe rows repeat
 * epochs until they have as many clips as one exact epoch. Then keyframe-aligned clips through
 * GOP runs (the same frames as the keyframe rows: what the run machinery itself costs), and
 * exact clips each decoded from its keyframe (the path before GOP runs) on a `--naive-clips`
 * prefix of the epoch.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/coverage.js [--videos 4] [--frames 900]
 *       [--size 640x360] [--gop 300] [--clip 16] [--batch 8] [--naive-clips 48] [--json]
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { open, type OpenOptions, type StreamStats } from "../sdk/index.js";
import { makeVideo } from "../test/helpers/make-video.js";

const { values } = parseArgs({
  options: {
    videos: { type: "string", default: "4" },
    frames: { type: "string", default: "900" },
    size: { type: "string", default: "640x360" },
    gop: { type: "string", default: "300" },
    clip: { type: "string", default: "16" },
    batch: { type: "string", default: "8" },
    "naive-clips": { type: "string", default: "48" },
    json: { type: "boolean", default: false },
  },
});
const [width, height] = values.size.split("x").map(Number) as [number, number];
const gop = Number(values.gop);

interface Row {
  clips: number;
  frames: number;
  decoded: number;
  seconds: number;
  /** CPU seconds of the whole process (decoder threads included) over the epoch. */
  cpu: number;
  positions: { key: string; start: number; position: number }[];
  batches: string[][];
}

async function epoch(dir: string, options: OpenOptions, runs: boolean): Promise<Row> {
  const ds = await open(
    dir,
    { device: "cpu", batch: Number(values.batch), ...options },
    runs ? {} : { openRun: false },
  );
  const positions: Row["positions"] = [];
  const batches: string[][] = [];
  const cpu0 = process.cpuUsage();
  try {
    for await (const b of ds) {
      for (const c of b.clips) positions.push({ key: c.key, start: c.start, position: c.position });
      batches.push(b.clips.map((c) => `${c.key}:${Math.floor(c.start / gop)}`));
      // As a training loop does once a step is done: the batch's memory carries the next clips.
      b.release();
    }
  } finally {
    await ds.close();
  }
  const used = process.cpuUsage(cpu0);
  const s: StreamStats = ds.stats();
  return {
    clips: s.clips,
    frames: s.frames,
    decoded: s.decoded_frames,
    seconds: s.seconds,
    cpu: (used.user + used.system) / 1e6,
    positions,
    batches,
  };
}

/** Keyframe-aligned epochs (seed 0, epochs 0, 1, …) until at least `clips` clips. */
async function keyframeRows(
  dir: string,
  clips: number,
  firstEpoch: number,
  runs = false,
): Promise<Row & { epochs: number }> {
  const sum = { clips: 0, frames: 0, decoded: 0, seconds: 0, cpu: 0, positions: [], batches: [], epochs: 0 };
  for (let e = firstEpoch; sum.clips < clips; e++, sum.epochs++) {
    const r = await epoch(dir, { frames: Number(values.clip), align: "keyframe", epoch: e }, runs);
    sum.clips += r.clips;
    sum.frames += r.frames;
    sum.decoded += r.decoded;
    sum.seconds += r.seconds;
    sum.cpu += r.cpu;
  }
  return sum;
}

/** Mean gap (in epoch positions) between consecutive clips of one GOP, and the smallest. */
function scatter(row: Row): { mean_gap: number; min_gap: number; distinct_gops_per_batch: number } {
  const byGop = new Map<string, number[]>();
  for (const p of row.positions) {
    const k = `${p.key}:${Math.floor(p.start / gop)}`;
    byGop.set(k, [...(byGop.get(k) ?? []), p.position]);
  }
  let sum = 0;
  let n = 0;
  let min = Infinity;
  for (const list of byGop.values()) {
    list.sort((a, b) => a - b);
    for (let i = 1; i < list.length; i++) {
      const gap = list[i]! - list[i - 1]!;
      sum += gap;
      n++;
      min = Math.min(min, gap);
    }
  }
  const full = row.batches.filter((b) => b.length === Number(values.batch));
  const distinct = full.reduce((a, b) => a + new Set(b).size, 0) / Math.max(1, full.length);
  return { mean_gap: n > 0 ? sum / n : 0, min_gap: n > 0 ? min : 0, distinct_gops_per_batch: distinct };
}

const root = await mkdtemp(join(tmpdir(), "ec-bench-coverage-"));
try {
  const dir = join(root, "videos");
  await mkdir(dir);
  const videos = Number(values.videos);
  for (let i = 0; i < videos; i++) {
    await makeVideo(dir, {
      codec: "h264",
      width,
      height,
      frames: Number(values.frames),
      gop,
      bframes: 2,
      name: `v${i}.mp4`,
    });
  }
  const totalFrames = videos * Number(values.frames);
  const exactOptions: OpenOptions = { frames: Number(values.clip), align: "exact" };
  let rss = 0;
  const sampler = setInterval(() => (rss = Math.max(rss, process.memoryUsage().rss)), 50);
  // Warm-up, not counted: the first rows of a process pay its JIT, the addon's first codecs and
  // the first touch of the batch pool, which would otherwise all land on the first exact row.
  await epoch(dir, { ...exactOptions, limit: Number(values["naive-clips"]) }, true);
  await keyframeRows(dir, Number(values["naive-clips"]), 300);
  const exact1 = await epoch(dir, exactOptions, true);
  const key1 = await keyframeRows(dir, exact1.clips, 0);
  const exact2 = await epoch(dir, exactOptions, true);
  const key2 = await keyframeRows(dir, exact1.clips, 100);
  const keyRuns = await keyframeRows(dir, exact1.clips, 200, true);
  const naive = await epoch(dir, { ...exactOptions, limit: Number(values["naive-clips"]) }, false);
  clearInterval(sampler);
  const cps = (r: Row) => r.clips / r.seconds;
  const cpuPerClip = (r: Row) => (r.cpu * 1000) / r.clips;
  const exactCps = (cps(exact1) + cps(exact2)) / 2;
  const keyCps = (cps(key1) + cps(key2)) / 2;
  const result = {
    videos,
    frames_in_videos: totalFrames,
    gop,
    clip: Number(values.clip),
    exact_clips: exact1.clips,
    coverage: exact1.frames / totalFrames,
    decoded_per_frame: exact1.decoded / exact1.frames,
    exact_clips_per_s: exactCps,
    keyframe_clips_per_s: keyCps,
    exact_vs_keyframe: exactCps / keyCps,
    keyframe_clips_per_epoch: key1.clips / key1.epochs,
    keyframe_coverage: key1.frames / key1.epochs / totalFrames,
    keyframe_decoded_per_frame: key1.decoded / key1.frames,
    exact_cpu_ms_per_clip: (cpuPerClip(exact1) + cpuPerClip(exact2)) / 2,
    keyframe_cpu_ms_per_clip: (cpuPerClip(key1) + cpuPerClip(key2)) / 2,
    keyframe_runs_clips_per_s: cps(keyRuns),
    keyframe_runs_cpu_ms_per_clip: cpuPerClip(keyRuns),
    naive_clips_per_s: cps(naive),
    naive_decoded_per_frame: naive.decoded / naive.frames,
    ...Object.fromEntries(Object.entries(scatter(exact1)).map(([k, v]) => [`scatter_${k}`, v])),
    rss_peak_mb: Math.round(rss / 2 ** 20),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else
    for (const [k, v] of Object.entries(result))
      process.stdout.write(`${k.padEnd(32)} ${typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : v}\n`);
} finally {
  await rm(root, { recursive: true, force: true });
}
