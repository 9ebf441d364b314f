/**
 * ec's CPU per delivered frame against the libavcodec + libswscale limit, side by side in one
 * run: `ec stream DIR --frames 16` (a process of its own, start-up included) and the engine the
 * Python client starts (`ec.open()` from Python, numpy arrays, the engine's CPU included) against
 * ffmpeg's own decode + swscale of the same files to rgb24 (`ffmpeg -threads 1 -i F -pix_fmt
 * rgb24 -f null -`, `-vf scale=W:H:flags=bilinear` for the resized rows). Every
 * process is pinned to one core (taskset) and ec decodes with one thread per clip there, as
 * ffmpeg does with -threads 1; CPU is user + system of each waited-for child (and its children)
 * from this process's cutime/cstime. Rows alternate (ffmpeg, ec stream, engine) `--rounds` times.
 * Videos are H.264 High with B-frames at realistic bytes per frame (testsrc2 with temporal
 * noise), made by ffmpeg once and kept under ~/.cache/ec/bench-videos.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/stream-cpu.js [--sizes 640x360,1280x720]
 *       [--videos 4] [--seconds 10] [--resize 224x224] [--rounds 2] [--core 1] [--no-engine]
 *       [--baseline-bin OTHER/bin/ec.js] [--json]
 *
 * `ec_cpu_per_frame_vs_ffmpeg` is ec stream's CPU per delivered frame ÷ ffmpeg's per decoded
 * frame (ffmpeg decodes every frame once; ec delivers the epoch's clips, about 1.01 decodes per
 * delivered frame); `..._steady` leaves out ec's start-up (the CPU of `ec stream --limit 1` on the
 * same files, and its 16 frames). `--baseline-bin` runs another build's `ec` (an older checkout's
 * bin/ec.js) in the same rounds, right after this one's rows: `baseline_…` and `…_vs_baseline`;
 * its engine row runs that checkout's Python client.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "640x360,1280x720" },
    videos: { type: "string", default: "4" },
    seconds: { type: "string", default: "10" },
    resize: { type: "string", default: "224x224" },
    rounds: { type: "string", default: "2" },
    core: { type: "string", default: "1" },
    engine: { type: "boolean", default: true },
    "baseline-bin": { type: "string" },
    json: { type: "boolean", default: false },
  },
  allowNegative: true,
});

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ecBin = join(root, "bin", "ec.js");
const pin = ["taskset", "-c", values.core];

/** Bitrate, frame rate and GOP by height: 360p30 at 2 Mb/s GOP 60, 720p60 at 8 Mb/s GOP 120, 1080p60 at 12 Mb/s GOP 120. */
function preset(height: number): { fps: number; kbps: number; gop: number } {
  if (height <= 480) return { fps: 30, kbps: 2000, gop: 60 };
  if (height <= 720) return { fps: 60, kbps: 8000, gop: 120 };
  return { fps: 60, kbps: 12000, gop: 120 };
}

function run(cmd: string[], env?: NodeJS.ProcessEnv): string {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8", env: env ?? process.env, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd.join(" ")} exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return r.stdout;
}

/** CPU seconds (user + system) of this process's waited-for children so far. */
function childCpu(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // f[0] is field 3 (state)
  return (Number(f[13]) + Number(f[14])) / 100;
}

/** Runs `cmd` and returns the CPU seconds it (and every process it waited for) spent, and its stdout. */
function measured(cmd: string[], env?: NodeJS.ProcessEnv): { cpu: number; out: string } {
  const c0 = childCpu();
  const out = run(cmd, env);
  return { cpu: childCpu() - c0, out };
}

/** `videos` files of `seconds` at WxH, made once per set of encoder settings. */
function fixtures(width: number, height: number): { dir: string; frames: number } {
  const p = preset(height);
  const frames = Number(values.seconds) * p.fps;
  const args = [
    ...["-f", "lavfi", "-i", `testsrc2=size=${width}x${height}:rate=${p.fps}`],
    ...["-frames:v", String(frames), "-vf", "noise=alls=12:allf=t", "-pix_fmt", "yuv420p"],
    ...["-c:v", "libx264", "-preset", "veryfast", "-profile:v", "high", "-bf", "3"],
    ...["-g", String(p.gop), "-keyint_min", String(p.gop), "-sc_threshold", "0"],
    ...["-b:v", `${p.kbps}k`, "-maxrate", `${Math.round(p.kbps * 1.25)}k`, "-bufsize", `${p.kbps * 2}k`, "-an"],
  ];
  const key = createHash("sha256")
    .update(JSON.stringify([args, values.videos]))
    .digest("hex")
    .slice(0, 12);
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache");
  const dir = join(cache, "ec", "bench-videos", `${width}x${height}-${key}`);
  if (!existsSync(`${dir}.complete`)) {
    const part = `${dir}.partial-${process.pid}`;
    mkdirSync(part, { recursive: true });
    for (let i = 0; i < Number(values.videos); i++) {
      // Each video its own noise: no two files decode alike.
      const seeded = args.map((a) => (a.startsWith("noise=") ? `noise=alls=12:allf=t:all_seed=${i + 1}` : a));
      run(["ffmpeg", "-v", "error", "-y", ...seeded, join(part, `v${i}.mp4`)]);
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(part, dir);
    run(["touch", `${dir}.complete`]);
  }
  return { dir, frames };
}

interface Row {
  cpu: number;
  frames: number;
}

function ffmpegRow(dir: string, resize: [number, number] | undefined): Row {
  let cpu = 0;
  let frames = 0;
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".mp4"))) {
    const scale = resize ? ["-vf", `scale=${resize[1]}:${resize[0]}:flags=bilinear`] : [];
    const r = measured([
      ...pin,
      "ffmpeg",
      ...["-v", "error", "-nostats", "-threads", "1", "-i", join(dir, f), ...scale],
      // rgb24 frames handed to the null muxer as they are: no copy into an output buffer, the
      // same work as a library call that converts into its caller's tensor.
      ...["-pix_fmt", "rgb24", "-f", "null", "-"],
    ]);
    cpu += r.cpu;
    frames += Number(
      run([
        ...["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=nb_frames"],
        ...["-of", "csv=p=0", join(dir, f)],
      ]).trim(),
    );
  }
  return { cpu, frames };
}

function ecStreamRow(dir: string, resize: [number, number] | undefined, limit?: number, bin = ecBin): Row {
  const r = measured([
    ...pin,
    process.execPath,
    bin,
    ...["stream", `file://${dir}`, "--frames", "16", "--json"],
    ...(resize ? ["--size", `${resize[0]}x${resize[1]}`] : []),
    ...(limit ? ["--limit", String(limit)] : []),
  ]);
  const stats = JSON.parse(r.out.trim().split("\n").at(-1)!) as { frames: number; errors: Record<string, number> };
  if (Object.keys(stats.errors).length > 0)
    throw new Error(`ec stream reported errors: ${JSON.stringify(stats.errors)}`);
  return { cpu: r.cpu, frames: stats.frames };
}

// The Python client without torch (numpy arrays): the engine's CPU and the client's, nothing of torch's import.
const PYTHON_CLIENT = `
import json, sys
sys.modules["torch"] = None
sys.path.insert(0, sys.argv[1])
import ec
args = json.loads(sys.argv[2])
ds = ec.open(args["url"], frames=16, **({"size": tuple(args["size"])} if args.get("size") else {}))
n = 0
for b in ds:
    n += b.frames.shape[0] * b.frames.shape[1]
ds.close()
print(json.dumps({"frames": n}))
`;

/** A Python with numpy for the client: EC_PYTHON, else the distribution's, else the one on PATH. */
function numpyPython(): string {
  const found = [process.env.EC_PYTHON, "/usr/bin/python3", "python3"]
    .filter((p): p is string => Boolean(p))
    .find((p) => spawnSync(p, ["-c", "import numpy"], { stdio: "ignore" }).status === 0);
  if (!found)
    throw new Error(
      "Expected a Python with numpy for the engine rows (set EC_PYTHON) but found none; --no-engine skips them",
    );
  return found;
}

function engineRow(dir: string, resize: [number, number] | undefined, bin = ecBin): Row {
  const env = { ...process.env, EC_ENGINE: bin, EC_NODE: process.execPath };
  // The Python client of the same checkout as the engine: a baseline's row runs its own client too.
  const client = join(dirname(bin), "..", "python", "src");
  const r = measured(
    [
      ...pin,
      numpyPython(),
      "-c",
      PYTHON_CLIENT,
      existsSync(client) ? client : join(root, "python", "src"),
      JSON.stringify({ url: `file://${dir}`, ...(resize ? { size: resize } : {}) }),
    ],
    env,
  );
  return { cpu: r.cpu, frames: (JSON.parse(r.out.trim().split("\n").at(-1)!) as { frames: number }).frames };
}

const resizeTo = values.resize ? (values.resize.split("x").map(Number) as [number, number]) : undefined;
const results: Record<string, unknown>[] = [];
for (const size of values.sizes.split(",")) {
  const [width, height] = size.split("x").map(Number) as [number, number];
  const { dir } = fixtures(width, height);
  const bytes = readdirSync(dir)
    .filter((n) => n.endsWith(".mp4"))
    .reduce((a, n) => a + readFileSync(join(dir, n)).byteLength, 0);
  for (const resize of [undefined, ...(resizeTo ? [resizeTo] : [])]) {
    const sum = {
      ffmpeg: { cpu: 0, frames: 0 },
      ec: { cpu: 0, frames: 0 },
      engine: { cpu: 0, frames: 0 },
      baselineEc: { cpu: 0, frames: 0 },
      baselineEngine: { cpu: 0, frames: 0 },
    };
    const baseline = values["baseline-bin"];
    const add = (k: keyof typeof sum, r: Row) => {
      sum[k].cpu += r.cpu;
      sum[k].frames += r.frames;
    };
    ecStreamRow(dir, resize, 1); // warm-up: page cache, V8's code cache
    if (baseline) ecStreamRow(dir, resize, 1, baseline);
    const startup = ecStreamRow(dir, resize, 1);
    const baselineStartup = baseline ? ecStreamRow(dir, resize, 1, baseline) : undefined;
    for (let i = 0; i < Number(values.rounds); i++) {
      add("ffmpeg", ffmpegRow(dir, resize));
      add("ec", ecStreamRow(dir, resize));
      if (baseline) add("baselineEc", ecStreamRow(dir, resize, undefined, baseline));
      if (values.engine) add("engine", engineRow(dir, resize));
      if (values.engine && baseline) add("baselineEngine", engineRow(dir, resize, baseline));
    }
    const ms = (r: Row) => (r.frames > 0 ? (r.cpu * 1000) / r.frames : Number.NaN);
    const ffmpegMs = ms(sum.ffmpeg);
    const steady = {
      cpu: sum.ec.cpu - startup.cpu * Number(values.rounds),
      frames: sum.ec.frames - startup.frames * Number(values.rounds),
    };
    results.push({
      size,
      output: resize ? `rgb24 ${resize[0]}x${resize[1]}` : "rgb24 native",
      kb_per_frame: Number((bytes / 1000 / (sum.ffmpeg.frames / Number(values.rounds))).toFixed(1)),
      ffmpeg_cpu_ms_per_frame: Number(ffmpegMs.toFixed(3)),
      ec_cpu_ms_per_frame: Number(ms(sum.ec).toFixed(3)),
      ec_startup_cpu_s: Number(startup.cpu.toFixed(2)),
      ...(values.engine ? { engine_cpu_ms_per_frame: Number(ms(sum.engine).toFixed(3)) } : {}),
      ec_cpu_per_frame_vs_ffmpeg: Number((ms(sum.ec) / ffmpegMs).toFixed(3)),
      ec_steady_cpu_per_frame_vs_ffmpeg: Number((ms(steady) / ffmpegMs).toFixed(3)),
      ...(values.engine ? { engine_cpu_per_frame_vs_ffmpeg: Number((ms(sum.engine) / ffmpegMs).toFixed(3)) } : {}),
      frames_per_row: sum.ec.frames / Number(values.rounds),
      ...(baseline && baselineStartup
        ? {
            baseline_ec_cpu_ms_per_frame: Number(ms(sum.baselineEc).toFixed(3)),
            baseline_ec_startup_cpu_s: Number(baselineStartup.cpu.toFixed(2)),
            baseline_ec_cpu_per_frame_vs_ffmpeg: Number((ms(sum.baselineEc) / ffmpegMs).toFixed(3)),
            ec_cpu_per_frame_vs_baseline: Number((ms(sum.ec) / ms(sum.baselineEc)).toFixed(3)),
            ...(values.engine
              ? {
                  baseline_engine_cpu_per_frame_vs_ffmpeg: Number((ms(sum.baselineEngine) / ffmpegMs).toFixed(3)),
                  engine_cpu_per_frame_vs_baseline: Number((ms(sum.engine) / ms(sum.baselineEngine)).toFixed(3)),
                }
              : {}),
          }
        : {}),
    });
    if (!values.json) process.stderr.write(`${JSON.stringify(results.at(-1))}\n`);
  }
}
if (values.json) process.stdout.write(`${JSON.stringify(results)}\n`);
