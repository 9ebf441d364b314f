/**
 * `ec stream URL`: iterates a dataset as a training loop would, with a live progress bar on
 * stderr and a summary at the end (`--json`: one JSON line on stdout). `--format native --md5`
 * prints `key,frame_index,md5` per delivered frame so frames can be checked against the source.
 */
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { describeReceived, EcError } from "../../common/errors.js";
import { InvalidOptionError } from "../errors.js";
import { open } from "../open.js";
import type { Batch } from "../pipeline/batcher.js";
import { BUCKET_FLAGS, BUCKET_FLAGS_USAGE, bucketOptions } from "./bucket-flags.js";
import type { OpenOptions } from "../options.js";
import type { StreamStats } from "../stats.js";

const USAGE = `usage: ec stream URL [--token T] [--cache URL] [--frames N] [--stride S] [--align keyframe|exact]
                 [--size HxW] [--batch B] [--limit CLIPS] [--device cpu|auto|cuda:N] [--workers N]
                 [--prefetch N] [--seed N] [--epoch N] [--rank R --world W] [--format rgb24|native] [--md5] [--json]
                 [--rotate none|auto] [--track N]   (turn frames by the display matrix; which video track)
                 [--step-ms MS]   (a training step's time per batch, to see whether data keeps up: stall_ratio)
                 [--preview FILE.png]   (a contact sheet of the first batch: a row of frames per clip)
                 ${BUCKET_FLAGS_USAGE}   (r2:// and s3:// URLs; default from the environment)
`;

const INT_FLAGS = [
  "frames",
  "stride",
  "batch",
  "limit",
  "workers",
  "prefetch",
  "seed",
  "epoch",
  "rank",
  "world",
  "hop",
  "track",
] as const;

/** "224x224" → [224, 224]; anything else is an argument error naming the flag. */
function parseSize(raw: string): [number, number] {
  const m = /^(\d+)x(\d+)$/.exec(raw);
  if (!m) throw new InvalidOptionError(`Expected HxW (e.g. 224x224) for --size but received ${describeReceived(raw)}`);
  return [Number(m[1]), Number(m[2])];
}

/** Parses argv into the dataset URL and open() options; open() validates the values. */
export function parseStreamArgs(argv: string[]): {
  url: string;
  options: OpenOptions;
  json: boolean;
  md5: boolean;
  stepMs: number;
  preview: string | undefined;
} {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      token: { type: "string" },
      cache: { type: "string" },
      size: { type: "string" },
      device: { type: "string" },
      align: { type: "string" },
      format: { type: "string" },
      rotate: { type: "string" },
      shuffle: { type: "string" },
      md5: { type: "boolean", default: false },
      preview: { type: "string" },
      ...BUCKET_FLAGS,
      "step-ms": { type: "string", default: "0" },
      json: { type: "boolean", default: false },
      ...Object.fromEntries(INT_FLAGS.map((f) => [f, { type: "string" as const }])),
    },
  });
  if (positionals.length !== 1)
    throw new InvalidOptionError(`Expected one dataset URL but received ${positionals.length}`);
  const o: Record<string, unknown> = {};
  for (const f of INT_FLAGS) {
    const v = (values as Record<string, unknown>)[f] as string | undefined;
    if (v !== undefined) o[f] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  }
  for (const f of ["token", "cache", "device", "align", "format", "rotate"] as const)
    if (values[f] !== undefined) o[f] = values[f];
  Object.assign(o, bucketOptions(values));
  if (values.shuffle !== undefined) o.shuffle = values.shuffle === "false" ? false : values.shuffle;
  if (values.size !== undefined) o.size = parseSize(values.size);
  if (values.md5 && o.format !== "native") {
    throw new InvalidOptionError(
      `Expected --format native with --md5 (framemd5 is over the decoder's own pixels) but received ${describeReceived(o.format ?? "rgb24")}`,
    );
  }
  const stepMs = Number(values["step-ms"]);
  if (!/^\d+$/.test(values["step-ms"]) || stepMs > 60_000) {
    throw new InvalidOptionError(
      `Expected milliseconds from 0 to 60000 for --step-ms but received ${describeReceived(values["step-ms"])}`,
    );
  }
  if (values.preview !== undefined && !values.preview.toLowerCase().endsWith(".png")) {
    throw new InvalidOptionError(`Expected a .png file for --preview but received ${describeReceived(values.preview)}`);
  }
  return {
    url: positionals[0]!,
    options: o as OpenOptions,
    json: values.json,
    md5: values.md5,
    stepMs,
    preview: values.preview,
  };
}

/**
 * The waiting figure in words. With a simulated step it is what a GPU would have idled; without
 * a consumer the loop asks for the next batch at once, so it only says that decode set the pace.
 */
function waitText(run: StreamRun, stepMs: number): string {
  const first =
    run.firstBatchSeconds === undefined ? "no batch came" : `first batch after ${run.firstBatchSeconds.toFixed(2)} s`;
  if (stepMs === 0) {
    const p = `${(run.stats.stall_ratio * 100).toFixed(1)} %`;
    return `${first}; waited for data ${p} of the time with no training step (expected: fetch and decode set the pace; --step-ms MS simulates a step)`;
  }
  return `${first}; then GPU idle ${(run.idleAfterFirst * 100).toFixed(1)} % at a ${stepMs} ms step (the share of the time a GPU would have waited for data)`;
}

function summaryLine(run: StreamRun, stepMs = 0): string {
  const s = run.stats;
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const rate = (n: number) => (s.seconds > 0 ? (n / s.seconds).toFixed(1) : "0");
  const errors =
    Object.entries(s.errors)
      .map(([k, v]) => `${k}×${v}`)
      .join(", ") || "none";
  return [
    `clips ${s.clips} (${rate(s.clips)}/s), frames ${s.frames} (${rate(s.frames)}/s) in ${s.seconds.toFixed(2)} s on ${s.device}` +
      (s.decode_fallbacks.count > 0
        ? ` (${s.decode_fallbacks.count} clips on the CPU: no NVDEC for ${s.decode_fallbacks.codecs.join(", ")})`
        : ""),
    `bytes fetched ${mb(s.bytes_fetched)} MB for ${mb(s.bytes_needed)} MB of GOP bytes the clips needed (${s.bytes_needed > 0 ? (s.bytes_fetched / s.bytes_needed).toFixed(2) : "-"}×: whole cache blocks, prefetch), ${rate(s.bytes_fetched / 1e6)} MB/s`,
    waitText(run, stepMs),
    `cache hits ${(s.cache_hit_ratio * 100).toFixed(1)} %, errors: ${errors}`,
  ].join("\n");
}

/** A contact sheet written as PNG. */
export interface PreviewFile {
  readonly path: string;
  readonly width: number;
  readonly height: number;
}

/** What a stream run ended with. */
export interface StreamRun {
  readonly stats: StreamStats;
  /** The contact sheet of the first batch (absolute path, size in pixels), when one was asked for and a batch came. */
  readonly preview?: PreviewFile;
  /** Seconds from open() to the first batch in the consumer's hands; undefined when none came. */
  readonly firstBatchSeconds: number | undefined;
  /**
   * The share of the time after the first batch that the consumer waited for the next one: with
   * a step, what a GPU would have idled once the stream was running (startup is firstBatchSeconds).
   */
  readonly idleAfterFirst: number;
  /** The error that stopped the stream early, if one did (skipped clips do not). */
  readonly failed: unknown;
  /** The dataset table generation the run planned from; undefined: from every object's index. */
  readonly generation: number | undefined;
}

/**
 * Iterates a dataset with a live progress bar on stderr (clips/s, frames/s, MB/s, stall %,
 * cache hits); with `md5`, writes `key,frame_index,md5` per frame to stdout. Used by
 * `ec stream` and by `ec demo`. Each batch is released (batch.release()) once `onBatch`, the md5
 * lines, the preview and the simulated step are done with it, so later batches are decoded into
 * its memory: `onBatch` copies what it keeps.
 *
 * @example
 * const { stats } = await streamWithProgress(url, { frames: 8, size: [224, 224] });
 */
export async function streamWithProgress(
  url: string,
  options: OpenOptions,
  o: { md5?: boolean; quiet?: boolean; stepMs?: number; preview?: string; onBatch?: (batch: Batch) => void } = {},
): Promise<StreamRun> {
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format:
        "{bar} {value}/{of} clips | {cps} clips/s | {fps} frames/s | {mbps} MB/s | waiting for data {stall}% | cache hits {hits}% | errors {errors}",
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  const opened = performance.now();
  const ds = await open(url, {
    ...options,
    onError: (err, clip) => {
      if (!o.quiet)
        process.stderr.write(`\nskipped${clip ? ` clip at frame ${clip.start}` : ""}: [${err.code}] ${err.message}\n`);
    },
  });
  // Over table pages read lazily the clip count is known only at the epoch's end: "?" until then.
  const of = Number.isFinite(ds.clipCount) ? String(ds.clipCount) : "?";
  const payload = () => {
    const s = ds.stats();
    const per = (n: number) => (s.seconds > 0 ? (n / s.seconds).toFixed(1) : "0");
    return {
      of,
      cps: per(s.clips),
      fps: per(s.frames),
      mbps: per(s.bytes_fetched / 1e6),
      stall: (s.stall_ratio * 100).toFixed(1),
      hits: (s.cache_hit_ratio * 100).toFixed(1),
      errors: Object.values(s.errors).reduce((a, b) => a + b, 0),
    };
  };
  bar.start(Number.isFinite(ds.clipCount) ? ds.clipCount : 0, 0, payload());
  const tick = setInterval(() => bar.update(ds.stats().clips, payload()), 250);
  let failed: unknown;
  let preview: PreviewFile | undefined;
  let firstAt: number | undefined;
  let waitedAfterFirst = 0;
  let endedAt: number | undefined;
  const batches = ds[Symbol.asyncIterator]();
  try {
    for (;;) {
      const asked = performance.now();
      const next = await batches.next();
      const got = performance.now();
      if (firstAt === undefined) firstAt = got;
      else waitedAfterFirst += got - asked;
      if (next.done) {
        endedAt = got;
        break;
      }
      const batch = next.value;
      if (o.preview && preview === undefined) preview = await writePreview(o.preview, batch);
      o.onBatch?.(batch);
      if (o.md5) {
        const lines: string[] = [];
        batch.decoded.forEach((clip, i) => {
          const info = batch.clips[i]!;
          clip.frames.forEach((f, t) =>
            lines.push(`${info.key},${info.start + t * info.stride},${createHash("md5").update(f.data).digest("hex")}`),
          );
        });
        process.stdout.write(`${lines.join("\n")}\n`);
      }
      if (o.stepMs) await sleep(o.stepMs);
      // Done with it: its memory takes a later batch instead of fresh pages (and no collection for them).
      batch.release();
    }
  } catch (err) {
    failed = err;
  } finally {
    clearInterval(tick);
    bar.update(ds.stats().clips, payload());
    bar.stop();
    await ds.close();
  }
  const ran = firstAt === undefined ? 0 : (endedAt ?? performance.now()) - firstAt;
  const gotBatch = ds.stats().clips > 0;
  return {
    stats: ds.stats(),
    failed,
    ...(preview ? { preview } : {}),
    firstBatchSeconds: gotBatch && firstAt !== undefined ? (firstAt - opened) / 1000 : undefined,
    idleAfterFirst: ran > 0 ? Math.min(1, waitedAfterFirst / ran) : 0,
    generation: ds.generation,
  };
}

/** Writes the batch's contact sheet as PNG at `path` (folders made as needed). */
async function writePreview(path: string, batch: Batch): Promise<PreviewFile> {
  const file = resolve(path);
  // The PNG encoder (fast-png, fflate, the pixel font) loads only when a preview is asked for.
  const { contactSheet } = await import("../preview/index.js");
  const sheet = contactSheet(batch.clips, batch.decoded);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, sheet.png());
  return { path: file, width: sheet.image.width, height: sheet.image.height };
}

/** The human summary printed at the end of a stream. */
export { summaryLine };

/**
 * @example
 * await main(["http://127.0.0.1:8787/v1/datasets/gameplay", "--frames", "8", "--json"]);
 */
export async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  let parsed: ReturnType<typeof parseStreamArgs>;
  try {
    parsed = parseStreamArgs(argv);
  } catch (err) {
    process.stderr.write(`ec stream: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { url, options, json, md5, stepMs, preview } = parsed;
  let result: StreamRun;
  try {
    result = await streamWithProgress(url, options, { md5, quiet: json, stepMs, ...(preview ? { preview } : {}) });
  } catch (err) {
    const code = err instanceof EcError ? err.code : "ERR_OPEN_FAILED";
    process.stderr.write(`ec stream: [${code}] ${(err as Error).message}\n`);
    return err instanceof InvalidOptionError ? 2 : 1;
  }
  const { stats, failed } = result;
  const sheet = result.preview;
  if (json) process.stdout.write(`${JSON.stringify(sheet ? { ...stats, preview: sheet.path } : stats)}\n`);
  else
    process.stderr.write(
      `${summaryLine(result, stepMs)}\n${sheet ? `first batch: ${sheet.path} (${sheet.width}x${sheet.height} px)\n` : ""}`,
    );
  if (failed) {
    process.stderr.write(
      `ec stream: [${failed instanceof EcError ? failed.code : "ERR_STREAM_FAILED"}] ${(failed as Error).message}\n`,
    );
    return 1;
  }
  return 0;
}
