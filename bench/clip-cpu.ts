/**
 * Where a clip's CPU goes, per path and per thread: exact clips through GOP runs, keyframe
 * clips each decoded on its own, and keyframe clips through GOP runs, rows alternating after
 * an uncounted warm-up of each, on generated h264 videos read from local files (CPU decoder).
 * The main thread's CPU and the other threads' (libuv decode threads and V8's helpers) come
 * from /proc/self/task/<tid>/stat; run it under `perf record -g` with
 * `node --perf-basic-prof` to see the functions. Also counts openRun calls (a run decoder taken
 * from the pool, else opened; a run that takes a retired run's decoder makes none).
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/clip-cpu.js [--videos 4] [--frames 900]
 *       [--gop 300] [--clips 224] [--reps 3] [--json]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { open } from "../sdk/index.js";
import { nativeDecoders } from "../sdk/pipeline/native-decode.js";
import { makeVideo } from "../test/helpers/make-video.js";
import { threadCpuSeconds } from "./compare/proc-tree.js";

const { values } = parseArgs({
  options: {
    videos: { type: "string", default: "4" },
    frames: { type: "string", default: "900" },
    gop: { type: "string", default: "300" },
    clips: { type: "string", default: "224" },
    reps: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  },
});

/** CPU ms of the main thread and of all the others, from the kernel's per-thread clock ticks. */
function threadCpu(): { main: number; other: number } {
  let main = 0;
  let other = 0;
  for (const [tid, seconds] of threadCpuSeconds(process.pid)) {
    if (tid === process.pid) main += seconds * 1000;
    else other += seconds * 1000;
  }
  return { main, other };
}

type Mode = "exact" | "keyframe" | "keyframe_runs";
let opens = 0;
const natives = nativeDecoders();
const openRun: typeof natives.openRun = (config) => {
  opens++;
  return natives.openRun(config);
};

async function row(dir: string, mode: Mode, want: number, firstEpoch: number) {
  let clips = 0;
  const opens0 = opens;
  const a = threadCpu();
  const t0 = performance.now();
  for (let e = firstEpoch; clips < want; e++) {
    const ds = await open(
      dir,
      { device: "cpu", batch: 8, frames: 16, align: mode === "exact" ? "exact" : "keyframe", epoch: e },
      mode === "keyframe" ? { openRun: false } : { openRun },
    );
    for await (const b of ds) b.release();
    await ds.close();
    clips += ds.stats().clips;
  }
  const b = threadCpu();
  return {
    mode,
    clips,
    main_ms_per_clip: (b.main - a.main) / clips,
    other_ms_per_clip: (b.other - a.other) / clips,
    clips_per_s: clips / ((performance.now() - t0) / 1000),
    open_run_calls: opens - opens0,
  };
}

const root = await mkdtemp(join(tmpdir(), "ec-bench-clip-cpu-"));
try {
  for (let i = 0; i < Number(values.videos); i++)
    await makeVideo(root, {
      codec: "h264",
      width: 640,
      height: 360,
      frames: Number(values.frames),
      gop: Number(values.gop),
      bframes: 2,
      name: `v${i}.mp4`,
    });
  const modes: Mode[] = ["exact", "keyframe", "keyframe_runs"];
  for (const m of modes) await row(root, m, 48, 500);
  const rows = [];
  for (let r = 0; r < Number(values.reps); r++)
    for (const m of modes) rows.push(await row(root, m, Number(values.clips), r * 20));
  if (values.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
  else
    for (const r of rows)
      process.stdout.write(
        `${r.mode.padEnd(14)} main ${r.main_ms_per_clip.toFixed(2)} + other threads ${r.other_ms_per_clip.toFixed(2)} ms/clip, ${r.clips_per_s.toFixed(1)} clips/s, ${r.open_run_calls} openRun calls\n`,
      );
} finally {
  await natives.close();
  await rm(root, { recursive: true, force: true });
}
