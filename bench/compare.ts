/**
 * `npm run bench`: the side-by-side comparison. Every row decodes the same clips of the same
 * videos in one run on this machine, each in its own process: local files through ec (the
 * upper bound), ec cold and warm through the WAN emulator, naive ffmpeg on signed URLs,
 * download-then-decode, and a PyTorch DataLoader with PyAV. Prints a table (and with --json
 * ends with one JSON line), and writes bench/results/compare.json and compare.svg.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseCompareArgs, type CompareConfig, type RowName } from "./compare/args.js";
import { renderChart } from "./compare/chart.js";
import type { PythonPairs } from "./compare/pair-summary.js";
import {
  bytesPerClipOf,
  figuresOf,
  ratiosOf,
  targetsOf,
  type LocalReference,
  type PythonRowName,
  type RowResult,
} from "./compare/figures.js";
import { videoFiles } from "./compare/fixtures.js";
import type { RowContext, RowDef } from "./compare/row.js";
import type { ClipRef } from "./compare/row-result.js";
import { downloadRow } from "./compare/rows/download.js";
import { ecColdRow, ecWarmRow, warmCache } from "./compare/rows/ec-remote.js";
import { ecPythonRow } from "./compare/rows/ec-python.js";
import { ecPythonWheelRow } from "./compare/rows/ec-python-wheel.js";
import { onClient, pinSelfToRemote, type CpuSets } from "./compare/cpu-sets.js";
import { localRow } from "./compare/rows/local.js";
import { naiveRow } from "./compare/rows/naive.js";
import { torchRow } from "./compare/rows/torch.js";
import {
  spdlRow,
  torchcodecLocalRow,
  torchcodecLocalSequentialRow,
  torchcodecRemoteRow,
} from "./compare/rows/peers.js";
import { scaleOnPaper } from "./compare/scale.js";
import { nodeArgs } from "./compare/run-child.js";
import { renderTable } from "./compare/table.js";
import { startTestbed, type Testbed } from "./compare/testbed.js";

/**
 * In run order. The peers run before ec cold: from ec cold to the end of the run the
 * origin-cache process is up on the client cores, and a row after it shares them with it.
 */
const ROWS: readonly RowDef[] = [
  localRow,
  torchcodecLocalSequentialRow,
  torchcodecLocalRow,
  spdlRow,
  torchcodecRemoteRow,
  ecColdRow,
  ecWarmRow,
  ecPythonRow,
  ecPythonWheelRow,
  naiveRow,
  downloadRow,
  torchRow,
];
/** What "Scale on paper" states: a host of 8 GPUs at 1,000 frames/s each, 16 hosts, a 1M-clip epoch, 10 s of prefetch. */
const STATED = { gpus: 8, gpuFps: 1000, hosts: 16, epochClips: 1_000_000, horizonS: 10 };

const here = dirname(fileURLToPath(import.meta.url));
const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/** The repository root: the nearest folder above the compiled script with a package.json (the build may sit at any depth). */
function repoRoot(): string {
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, "package.json"))) return dir;
  throw new Error(`Expected a package.json above ${here} but found none`);
}

async function startCacheProcess(
  childDir: string,
  bed: Testbed,
  dir: string,
  blockKib: number,
  cpus: CpuSets,
): Promise<{ url: string; pid: number; proc: ChildProcess }> {
  // Blocks must be whole 4 KiB pages (cuFile/O_DIRECT); a 4 KiB multiple of the flag.
  const blockSize = Math.max(4096, Math.round((blockKib * 1024) / 4096) * 4096);
  const args = { upstream: bed.wan.url, dir, maxBytes: 4 * 2 ** 30, caFile: bed.caFile, blockSize };
  // The origin-cache runs on the GPU host: the client side's cores.
  const run = onClient(cpus, process.execPath, nodeArgs([join(childDir, "cache-service.js"), JSON.stringify(args)]));
  const proc = spawn(run.command, run.args, { stdio: ["ignore", "pipe", "inherit"] });
  const first = await new Promise<string>((resolveLine, reject) => {
    const rl = createInterface({ input: proc.stdout! });
    rl.once("line", (line) => resolveLine(line));
    proc.once("exit", (code) => reject(new Error(`the origin-cache process exited with ${code} before listening`)));
  });
  return { url: (JSON.parse(first) as { url: string }).url, pid: proc.pid!, proc };
}

/** The videos' bytes over their frames (ffprobe's frame count), or null where ffprobe cannot tell. */
async function bytesPerFrame(files: readonly string[]): Promise<number | null> {
  let bytes = 0;
  let frames = 0;
  for (const f of files) {
    const r = spawnSync(
      "ffprobe",
      ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=nb_frames", "-of", "csv=p=0", f],
      { encoding: "utf8" },
    );
    const n = Number(r.stdout?.trim());
    if (r.status !== 0 || !Number.isFinite(n) || n <= 0) return null;
    bytes += (await stat(f)).size;
    frames += n;
  }
  return frames > 0 ? Math.round(bytes / frames) : null;
}

/** A clip as the clip-list checks compare it: its key (below the dataset prefix) and first frame. */
function clipIds(clips: readonly ClipRef[], key: (k: string) => string = (k) => k): string {
  return clips.map((c) => `${key(c.key)}@${c.start}`).join(",");
}

/** The context of a slow row: the first `n` clips, and local runs limited to them. */
function firstClips(ctx: RowContext, n: number): RowContext {
  const count = Math.min(n, ctx.clips.length);
  return { ...ctx, config: { ...ctx.config, clips: count }, clips: ctx.clips.slice(0, count) };
}

/** The mean of the local runs before and after a row; either alone if the other failed. */
function meanReference(a: LocalReference | undefined, b: LocalReference | undefined): LocalReference | undefined {
  if (!a || !b) return a ?? b;
  return { clipsPerS: (a.clipsPerS + b.clipsPerS) / 2, steadyClipsPerS: (a.steadyClipsPerS + b.steadyClipsPerS) / 2 };
}

/** One more run of the local row, as the reference of the row just measured; undefined if it fails. */
async function localReference(ctx: RowContext): Promise<LocalReference | undefined> {
  try {
    const o = await localRow.run(ctx);
    if (o.kind !== "ran") return undefined;
    const f = figuresOf(o, undefined, ctx.config.batch);
    log(`  local reference: ${f.clips_per_s} clips/s (${f.clips} clips)`);
    if (clipIds(o.report.clipList ?? []) !== clipIds(ctx.clips))
      log("  the local reference decoded other clips than the row's: read its ratio with care");
    return { clipsPerS: f.clips_per_s, steadyClipsPerS: f.steady_clips_per_s };
  } catch (err) {
    log(`  local reference failed: ${(err as Error).message.split("\n")[0]}`);
    return undefined;
  }
}

function subtitle(c: CompareConfig, files: number): string {
  const videos = c.videos
    ? `${files} videos from ${c.videos}`
    : `${files} × ${c.width}x${c.height} ${c.codecs.join("/")} ${c.seconds}s@${c.fps} gop ${c.gop}${c.bitrateMbps === undefined ? "" : ` ${c.bitrateMbps} Mbit/s`}`;
  const preset = c.preset ? `preset ${c.preset}: ` : "";
  const resize = c.resize ? ` resized to ${c.resize[1]}x${c.resize[0]}` : "";
  return `${preset}${videos}; ${c.clips} clips × ${c.frames} frames${resize}, batch ${c.batch}; WAN ${c.rttMs} ms RTT, ${c.bandwidthMbps} Mbit/s; cache blocks ${c.blockKib} KiB; ${cpus().length} cores`;
}

async function main(): Promise<number> {
  const parsed = parseCompareArgs(process.argv.slice(2));
  // From here on this process and what it starts (wrangler, workerd, the WAN emulator in it) run on the remote set.
  const config = { ...parsed, cpus: pinSelfToRemote(parsed.cpus) };
  log(
    config.cpus.unpinned
      ? `not pinning CPUs: ${config.cpus.unpinned}`
      : `client side on CPUs ${config.cpus.client.join(",")}, remote side (edge, WAN) on ${config.cpus.remote.join(",")}`,
  );
  const root = repoRoot();
  const loadAtStart = loadavg()[0]!;
  const childDir = join(here, "compare", "child");
  const workDir = await mkdtemp(join(tmpdir(), "ec-bench-"));
  const results: Partial<Record<RowName, RowResult>> = {};
  let testbed: Testbed | undefined;
  let testbedFailed = false;
  let cacheProc: ChildProcess | undefined;
  try {
    const localDir = join(workDir, "videos");
    await mkdir(localDir);
    log(config.videos ? `copying videos from ${config.videos}` : `making ${config.count} videos with ffmpeg`);
    const files = await videoFiles(config, localDir);
    const videoBytesPerFrame = await bytesPerFrame(files);
    if (videoBytesPerFrame !== null) log(`videos: ${videoBytesPerFrame} bytes per frame`);
    const ctx: { -readonly [K in keyof RowContext]: RowContext[K] } = {
      config,
      localDir,
      workDir,
      childDir,
      root,
      testbed: undefined,
      cache: undefined,
      clips: [],
    };
    let gopBytesPerClip: number | undefined;
    let lastLocal: LocalReference | undefined;
    let sameClips: boolean | null = null;
    const pythonPairs: Partial<Record<PythonRowName, PythonPairs>> = {};
    const rowLoad: Partial<Record<RowName, number>> = {};
    for (const row of ROWS.filter((r) => config.rows.includes(r.name))) {
      // The local peers read the local folder: they need no edge.
      const needsEdge = !["local", "torchcodec_local", "torchcodec_local_sequential", "spdl"].includes(row.name);
      if (needsEdge && !ctx.testbed && !testbedFailed) {
        log("starting the local edge and the WAN emulator");
        try {
          testbed = await startTestbed({
            files,
            prefix: "bench",
            warmupPrefix: config.cacheWarmupClips > 0 ? "warmup" : undefined,
            workDir: join(workDir, "edge"),
            rttMs: config.rttMs,
            bandwidthBytesPerSec: (config.bandwidthMbps * 1e6) / 8,
          });
          ctx.testbed = testbed;
        } catch (err) {
          testbedFailed = true;
          log(`the local edge did not start: ${(err as Error).message}`);
        }
      }
      if (row.name === "ec_cold" && ctx.testbed) {
        try {
          const c = await startCacheProcess(
            childDir,
            ctx.testbed,
            join(workDir, "cache"),
            config.blockKib,
            config.cpus,
          );
          cacheProc = c.proc;
          ctx.cache = { url: c.url, pid: c.pid };
        } catch (err) {
          log(`the origin-cache did not start: ${(err as Error).message}`);
        }
        if (ctx.cache && config.cacheWarmupClips > 0) {
          log(`warming the origin-cache up: ${config.cacheWarmupClips} clips of other keys, not measured`);
          await warmCache(ctx, config.cacheWarmupClips).catch((err: unknown) =>
            log(`the cache warm-up failed (the rows meet a fresh cache): ${(err as Error).message.split("\n")[0]}`),
          );
        }
      }
      // A slow row decodes the first clips only, and is set against local runs of those same clips.
      const rowCtx = row.slow && ctx.clips.length > 0 ? firstClips(ctx, config.slowClips) : ctx;
      const slowBefore = rowCtx !== ctx ? await localReference(rowCtx) : undefined;
      rowLoad[row.name] = loadavg()[0]!;
      log(`row ${row.name}: ${row.label} (load average ${rowLoad[row.name]!.toFixed(1)})`);
      let outcome;
      try {
        outcome = await row.run(rowCtx);
      } catch (err) {
        outcome = {
          kind: "skipped" as const,
          reason: `failed: ${(err as Error).message.split("\n").slice(0, 6).join(" | ")}`,
        };
      }
      if (outcome.kind === "skipped") {
        log(`row ${row.name} skipped: ${outcome.reason}`);
        results[row.name] = { label: row.label, status: "skipped", reason: outcome.reason };
        continue;
      }
      // Load on shared cores drifts: each row is set against local runs right before and after it.
      let reference: LocalReference | undefined;
      if (rowCtx !== ctx) reference = meanReference(slowBefore, await localReference(rowCtx));
      else if (row.name !== "local" && lastLocal) {
        const after = await localReference(ctx);
        reference = meanReference(lastLocal, after);
        if (after) lastLocal = after;
      }
      if (outcome.pythonPairs) pythonPairs[row.name as PythonRowName] = outcome.pythonPairs;
      const figures = figuresOf(outcome, reference, config.batch);
      results[row.name] = { label: row.label, status: "ran", figures };
      log(`row ${row.name}: ${figures.clips} clips in ${figures.seconds} s = ${figures.clips_per_s} clips/s`);
      if (row.name === "local") {
        ctx.clips = outcome.report.clipList ?? [];
        lastLocal = { clipsPerS: figures.clips_per_s, steadyClipsPerS: figures.steady_clips_per_s };
        gopBytesPerClip =
          outcome.report.bytesNeeded !== undefined && figures.clips > 0
            ? outcome.report.bytesNeeded / figures.clips
            : undefined;
        if (ctx.clips.length === 0) throw new Error("The local row delivered no clips; nothing to compare");
      }
      if (row.name === "ec_cold") {
        const strip = (k: string): string => k.slice(k.indexOf("/") + 1);
        sameClips = clipIds(outcome.report.clipList ?? [], strip) === clipIds(ctx.clips);
      }
    }
    const ratios = ratiosOf(results, gopBytesPerClip, pythonPairs);
    const targets = targetsOf(ratios);
    const cold = results.ec_cold;
    const scale =
      cold?.status === "ran"
        ? scaleOnPaper({ cold: cold.figures, framesPerClip: config.frames, rttMs: config.rttMs, ...STATED })
        : null;
    const summary = {
      config: { ...config, cores: cpus().length, cpu: cpus()[0]?.model ?? "unknown" },
      // The cores are shared: other work on the machine moves every row, so the 1-minute load average is recorded.
      load_average: { start: loadAtStart, end: loadavg()[0]! },
      gop_bytes_per_clip: gopBytesPerClip === undefined ? null : Math.round(gopBytesPerClip),
      // The made videos' bytes per frame (file bytes over frames), so a preset's bitrate reads as what a frame weighs.
      video_bytes_per_frame: videoBytesPerFrame,
      bytes_per_clip: bytesPerClipOf(results),
      same_clips_ec_cold_vs_local: sameClips,
      rows: Object.fromEntries(
        Object.entries(results).map(([k, r]) => [
          k,
          r.status === "ran"
            ? { label: r.label, ...r.figures, load_average: rowLoad[k as RowName] }
            : { label: r.label, skipped: r.reason },
        ]),
      ),
      ratios,
      // The alternating TypeScript/Python runs ec_python_vs_ts (ec_python_wheel_vs_ts) is the median of (--pairs).
      ec_python_pairs: pythonPairs.ec_python ?? null,
      ec_python_wheel_pairs: pythonPairs.ec_python_wheel ?? null,
      targets,
      scale: scale === null ? null : { stated: STATED, ...scale },
    };
    const out = resolve(root, config.out);
    await mkdir(out, { recursive: true });
    await writeFile(join(out, "compare.json"), `${JSON.stringify(summary, null, 2)}\n`);
    await writeFile(join(out, "compare.svg"), renderChart(results, subtitle(config, files.length)));
    process.stdout.write(`\n${subtitle(config, files.length)}\n\n${renderTable(results, targets)}`);
    process.stdout.write(
      `  after the first batch (no target): ec_cold_vs_local_steady = ${ratios.ec_cold_vs_local_steady ?? "-"}, ec_warm_vs_local_steady = ${ratios.ec_warm_vs_local_steady ?? "-"}\n`,
    );
    for (const [name, p] of Object.entries(pythonPairs))
      process.stdout.write(
        `  ${name}_vs_ts from ${p.pairs.length} alternating pairs (steady): median ${p.ratio_median} (${p.ratio_min}–${p.ratio_max}); start-up included ${p.ratio_with_start_median}; first batch ts ${p.pairs.map((x) => x.ts_first_batch_s).join("/")} s, py ${p.pairs.map((x) => x.py_first_batch_s).join("/")} s\n`,
      );
    if (ratios.python_first_batch_wheel_vs_checkout !== null)
      process.stdout.write(
        `  first batch, the installed wheel's over the checkout's (no target): python_first_batch_wheel_vs_checkout = ${ratios.python_first_batch_wheel_vs_checkout}\n`,
      );
    if (scale)
      process.stdout.write(
        `\nscale on paper (${STATED.gpus} GPUs × ${STATED.gpuFps} frames/s per host, ${STATED.hosts} hosts, ${STATED.epochClips} clips/epoch):\n${scale.formulas.map((f) => `  ${f}`).join("\n")}\n`,
      );
    process.stdout.write(`\nwrote ${join(config.out, "compare.json")} and ${join(config.out, "compare.svg")}\n`);
    if (config.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
    return 0;
  } finally {
    cacheProc?.kill("SIGTERM");
    await testbed?.close().catch(() => {});
    await rm(workDir, { recursive: true, force: true }).catch(() => {});
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
