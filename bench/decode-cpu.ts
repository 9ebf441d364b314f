/**
 * CPU decode benchmark: ec's native decoder against `ffmpeg -threads N -i FILE -f null -`
 * on the same file and thread count (ratio), the cost of conversion and resize on top of
 * the decode, and RSS over 10,000 decode calls (leak check).
 *
 *   npx tsc -p bench/tsconfig.json && node --expose-gc dist/bench/decode-cpu.js [--threads 2] [--rounds 3]
 *       [--codec h264] [--size 1280x720] [--frames 300] [--calls 10000] [--phase all|throughput|leak] [--json]
 *       [--preset gameplay-720p|gameplay-1080p]
 *
 * --preset decodes the first video of `npm run bench -- --preset NAME` in --codec (the same
 * cached file: 60 fps, its GOP and bitrate, 8 s) instead of testsrc2 at --size and --frames.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver, constants } from "node:perf_hooks";
import { parseArgs } from "node:util";

import type { VideoTrackV1 } from "../common/schema/index.js";
import { createDecoder, packetsFromTrack, type Decoder, type DecoderOptions, type Packets } from "../native/index.js";
import { PRESETS, type PresetName } from "./compare/args.js";
import { gopCalls, indexedFile, makeBenchVideo } from "./decode-fixtures.js";
import { gameplayVideo } from "./gameplay-video.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    threads: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    codec: { type: "string", default: "h264" },
    size: { type: "string", default: "1280x720" },
    frames: { type: "string", default: "300" },
    calls: { type: "string", default: "10000" },
    phase: { type: "string", default: "all" },
    json: { type: "boolean", default: false },
    preset: { type: "string" },
  },
});
if (values.preset !== undefined && !Object.hasOwn(PRESETS, values.preset))
  throw new Error(
    `Expected --preset among ${Object.keys(PRESETS).join(", ")} but received ${JSON.stringify(values.preset)}`,
  );
const preset = values.preset === undefined ? undefined : PRESETS[values.preset as PresetName];
const threads = Number(values.threads);
const rounds = Number(values.rounds);
const [width, height] = (preset?.size ?? values.size).split("x").map(Number) as [number, number];
let frames = Number(values.frames);
const calls = Number(values.calls);

// Major collections while ec decodes: every ArrayBuffer handed out counts as V8 external
// memory, and V8 collects each time that grows 64 MB (a 60-frame 720p call is 83 MB).
const majorGcs: number[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
      majorGcs.push(e.startTime);
}).observe({ entryTypes: ["gc"] });
const gcWindows: [number, number][] = [];

/** CPU seconds (user + system) of waited-for children, where /proc says (Linux); else NaN. */
function childCpuSeconds(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields[0] is field 3 (state)
    return (Number(fields[13]) + Number(fields[14])) / 100; // cutime + cstime, in USER_HZ (100)
  } catch {
    return Number.NaN;
  }
}

interface Run {
  seconds: number;
  cpuSeconds: number; // every thread of the process: decoder threads, the caller, V8's collector
  systemSeconds: number; // the kernel's share of it (page faults of fresh memory, thread wake-ups)
}

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * Collects what earlier windows left (with --expose-gc): the batches the other variants and the
 * previous round handed out. A stream decoding without pause has them collected by the
 * collections its own calls trigger and its blocks back in the pool by its next call; between
 * this bench's interleaved windows they can still be held, so a 1080p GOP (a 746 MB batch) would
 * start each window on fresh pages. Collections inside the window stay counted.
 */
async function collectEarlierWindows(): Promise<void> {
  if (!gc) return;
  // The first collection queues the buffers' N-API finalizers; they run on a later tick.
  for (let i = 0; i < 2; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function oursRun(decoder: Decoder, track: VideoTrackV1, calls: Packets[], countGc = false): Promise<Run> {
  await collectEarlierWindows();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let n = 0;
  for (const packets of calls) n += (await decoder.decode(packets)).length;
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  if (countGc) gcWindows.push([t0, performance.now()]);
  if (n !== track.samples.size.length) throw new Error(`decoded ${n} of ${track.samples.size.length} frames`);
  return { seconds: s, cpuSeconds: (cpu.user + cpu.system) / 1e6, systemSeconds: cpu.system / 1e6 };
}

function ffmpegRun(file: string, limit: string[] = []): Run {
  const c0 = childCpuSeconds();
  const t0 = performance.now();
  const r = spawnSync("ffmpeg", [
    "-v",
    "error",
    "-threads",
    String(threads),
    "-i",
    file,
    "-map",
    "0:v:0",
    ...limit,
    "-f",
    "null",
    "-",
  ]);
  if (r.status !== 0) throw new Error(`ffmpeg failed: ${r.stderr}`);
  return { seconds: (performance.now() - t0) / 1000, cpuSeconds: childCpuSeconds() - c0, systemSeconds: Number.NaN };
}

/** The video to decode, and how the report names it. */
async function benchVideo(dir: string): Promise<{ file: string; label: string }> {
  if (!preset) {
    const file = await makeBenchVideo(dir, values.codec, width, height, frames);
    const bf = values.codec === "h264" ? ", 3 B-frames" : "";
    return { file, label: `${values.codec} ${width}x${height}, ${frames} frames, GOP 60${bf}` };
  }
  if (values.codec !== "h264" && values.codec !== "hevc")
    throw new Error(`Expected --codec h264 or hevc with --preset but received ${JSON.stringify(values.codec)}`);
  const v = {
    codec: values.codec,
    width,
    height,
    fps: Number(preset.fps),
    gop: Number(preset.gop),
    seconds: Number(preset.seconds),
    bitrateMbps: Number(preset["bitrate-mbps"]),
    faststart: true,
    seed: 0,
  } as const;
  const file = await gameplayVideo(v);
  return {
    file,
    label: `${values.preset} ${v.codec} ${width}x${height}@${v.fps}, ${v.seconds * v.fps} frames, GOP ${v.gop}, ${v.bitrateMbps} Mbit/s, 3 B-frames`,
  };
}

async function throughput(dir: string) {
  const video = await benchVideo(dir);
  const file = video.file;
  const { track, bytes } = await indexedFile(file);
  frames = track.samples.size.length;
  const calls = gopCalls(track, bytes);
  const variants: [string, Partial<DecoderOptions>][] = [
    ["native", {}],
    ["rgb24", { output: "rgb24" }],
    ["rgbf32-planar", { output: "rgbf32-planar" }],
    ["rgb24 resize 224x224", { output: "rgb24", resize: [224, 224] }],
  ].filter(
    // A preset's GOP is one call: 240 frames of 1080p as float32 planes are 6 GB and rgb24 at
    // native size 1.5 GB a call, more than a shared bench machine should hold for a decode figure;
    // the training case the preset stands for is the 224x224 one.
    ([name]) => !preset || name === "native" || name === "rgb24 resize 224x224",
  ) as [string, Partial<DecoderOptions>][];
  const times: Record<string, number[]> = { ffmpeg: [], ffmpegStartup: [] };
  const cpu: Record<string, number[]> = { ffmpeg: [], ffmpegStartup: [], native: [], nativeSystem: [] };
  // One decoder per variant, opened and run once before timing (as the SDK reuses decoders):
  // its start-up stays out of the figures, like ffmpeg's start-up run subtracted below.
  const decoders = new Map<string, Decoder>();
  for (const [name, extra] of variants) {
    const decoder = await createDecoder({
      codec: track.codec,
      extradata: track.extradata,
      width: track.width,
      height: track.height,
      threads,
      ...extra,
    });
    decoders.set(name, decoder);
    await oursRun(decoder, track, calls);
  }
  for (let r = 0; r < rounds; r++) {
    // Interleaved so background load hits both sides alike.
    const whole = ffmpegRun(file);
    // Process start, probe and one frame: subtracted for a decode-only figure.
    const startup = ffmpegRun(file, ["-frames:v", "1"]);
    times.ffmpeg!.push(whole.seconds);
    times.ffmpegStartup!.push(startup.seconds);
    cpu.ffmpeg!.push(whole.cpuSeconds);
    cpu.ffmpegStartup!.push(startup.cpuSeconds);
    for (const [name] of variants) {
      const run = await oursRun(decoders.get(name)!, track, calls, name === "native");
      (times[name] ??= []).push(run.seconds);
      if (name === "native") {
        cpu.native!.push(run.cpuSeconds);
        cpu.nativeSystem!.push(run.systemSeconds);
      }
    }
  }
  for (const decoder of decoders.values()) await decoder.close();
  await new Promise((resolve) => setImmediate(resolve)); // the observer's last entries
  const gcs = majorGcs.filter((t) => gcWindows.some(([a, b]) => t >= a && t <= b)).length;
  const fps = (name: string) => frames / median(times[name]!);
  const nativeMs = (1000 * median(times.native!)) / frames;
  // CPU per frame, all threads: steadier than wall time on a shared machine, and it shows
  // what ec spends beyond the decoder (collection, hand-off) whatever the cores' load.
  const ffmpegCpuMs = (1000 * (median(cpu.ffmpeg!) - median(cpu.ffmpegStartup!))) / frames;
  const ecCpuMs = (1000 * median(cpu.native!)) / frames;
  return {
    file: video.label,
    bytesPerFrame: Math.round(bytes.length / frames),
    threads,
    rounds,
    ffmpegFps: fps("ffmpeg"),
    ffmpegDecodeOnlyFps: frames / (median(times.ffmpeg!) - median(times.ffmpegStartup!)),
    ecNativeFps: fps("native"),
    ratio: fps("native") / fps("ffmpeg"),
    ratioDecodeOnly: fps("native") / (frames / (median(times.ffmpeg!) - median(times.ffmpegStartup!))),
    ffmpegDecodeCpuMsPerFrame: ffmpegCpuMs,
    ecNativeCpuMsPerFrame: ecCpuMs,
    ecNativeSystemCpuMsPerFrame: (1000 * median(cpu.nativeSystem!)) / frames,
    cpuRatio: ffmpegCpuMs / ecCpuMs,
    ecNativeMajorGcsPerCall: gcs / (rounds * calls.length),
    conversions: variants.slice(1).map(([name]) => ({
      output: name,
      fps: fps(name),
      extraMsPerFrame: (1000 * median(times[name]!)) / frames - nativeMs,
    })),
  };
}

async function leak(dir: string) {
  // 256x144: native output decodes in place (frames in buffers of their own), rgb24 converts.
  const file = await makeBenchVideo(dir, "h264", 256, 144, 24);
  const { track, bytes } = await indexedFile(file);
  const clip = packetsFromTrack(track, bytes, 0, 0, 12);
  const garbage: Packets = { data: new Uint8Array(bytes.length).fill(0xff), samples: clip.samples };
  const rss = () => {
    gc?.();
    return process.memoryUsage().rss;
  };
  let opened = 0;
  const open = () =>
    createDecoder({
      codec: track.codec,
      extradata: track.extradata,
      width: track.width,
      height: track.height,
      threads: 1,
      output: opened++ % 2 ? "rgb24" : "native",
    });
  let decoder = await open();
  const samples: { call: number; rssMiB: number }[] = [];
  let base = 0;
  for (let i = 1; i <= calls; i++) {
    // Every 10th call on a fresh decoder (native and rgb24 output in turn) and every 100th on
    // corrupt bytes: open/close and error paths too.
    if (i % 10 === 0) {
      await decoder.close();
      decoder = await open();
    }
    if (i % 100 === 0) await decoder.decode(garbage).catch(() => undefined);
    else await decoder.decode(clip);
    if (i === Math.min(1000, calls)) base = rss();
    if (i % (calls / 10) === 0) samples.push({ call: i, rssMiB: rss() / 2 ** 20 });
  }
  await decoder.close();
  const end = rss();
  return {
    calls,
    gcExposed: gc !== undefined,
    rssAfter1000MiB: base / 2 ** 20,
    rssEndMiB: end / 2 ** 20,
    growthMiB: (end - base) / 2 ** 20,
    samples,
  };
}

const dir = await mkdtemp(join(tmpdir(), "ec-bench-decode-"));
try {
  // "leak" alone keeps the throughput phase's pooled batch blocks out of the RSS figures.
  const t = values.phase === "leak" ? undefined : await throughput(dir);
  const l = values.phase === "throughput" ? undefined : await leak(dir);
  const f = (x: number) => x.toFixed(1);
  if (values.json) {
    process.stdout.write(JSON.stringify({ throughput: t, leak: l }) + "\n");
  }
  if (!values.json && t) {
    console.log(
      `decode throughput — ${t.file} (${t.bytesPerFrame} bytes/frame), ${t.threads} threads, median of ${t.rounds}`,
    );
    console.log(`  ffmpeg -threads ${t.threads} -f null   ${f(t.ffmpegFps)} fps`);
    console.log(`  ffmpeg minus its start-up    ${f(t.ffmpegDecodeOnlyFps)} fps`);
    console.log(
      `  ec native decode             ${f(t.ecNativeFps)} fps   ratio ${t.ratio.toFixed(3)} (vs start-up-corrected: ${t.ratioDecodeOnly.toFixed(3)})`,
    );
    console.log(
      `  CPU per frame (all threads)  ffmpeg decode ${t.ffmpegDecodeCpuMsPerFrame.toFixed(2)} ms, ec native ${t.ecNativeCpuMsPerFrame.toFixed(2)} ms: ratio ${t.cpuRatio.toFixed(3)}; ${t.ecNativeMajorGcsPerCall.toFixed(2)} major GCs per ec call; ec's kernel share ${t.ecNativeSystemCpuMsPerFrame.toFixed(2)} ms`,
    );
    for (const c of t.conversions)
      console.log(
        `  ec ${c.output.padEnd(25)} ${f(c.fps)} fps   +${c.extraMsPerFrame.toFixed(3)} ms/frame over native`,
      );
  }
  if (!values.json && l) {
    console.log(`leak check — ${l.calls} decode calls (gc exposed: ${l.gcExposed})`);
    console.log(
      `  RSS after 1000: ${f(l.rssAfter1000MiB)} MiB, at end: ${f(l.rssEndMiB)} MiB, growth ${f(l.growthMiB)} MiB`,
    );
    console.log(`  ${l.samples.map((s) => `${s.call}:${f(s.rssMiB)}`).join("  ")}`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
