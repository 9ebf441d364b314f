/**
 * What `ec demo` ends with: a summary a newcomer can read (each figure says what it means) and
 * the same figures as one JSON object for machines.
 */
import type { TableReady } from "../dev/table-ready.js";
import type { PushSummary } from "../push/index.js";
import type { DemoEpoch, DemoStream } from "./stream-demo.js";
import { DEMO_STREAM } from "./stream-demo.js";

/** The demo's first hop: pushed objects read back through signed URLs. */
export interface DemoChecks {
  readonly edge: string;
  readonly prefix: string;
  readonly pushed: PushSummary;
  readonly reads: number;
  readonly readBytes: number;
  readonly mismatches: number;
  /** The dataset table generation published for the pushed objects; undefined when none came in time. */
  readonly table: TableReady | undefined;
}

const round = (n: number, digits = 3) => (Number.isFinite(n) ? Number(n.toFixed(digits)) : null);
const pct = (ratio: number) => `${(ratio * 100).toFixed(ratio < 0.1 ? 1 : 0)} %`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;
const errorCount = (e: DemoEpoch) => Object.values(e.stats.errors).reduce((a, b) => a + b, 0);

function sumFlags(epochs: readonly DemoEpoch[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of epochs) for (const [f, n] of Object.entries(e.flags)) out[f] = (out[f] ?? 0) + n;
  return out;
}

/**
 * The JSON summary (`ec demo --json`): `clips` (all epochs), `epochs`, `first_batch_s` (epoch
 * 1), `gpu_idle_ratio` at `step_ms`, `epoch2_cache_hit_ratio`, `preview`, and per epoch the
 * stream's own stats.
 *
 * @example
 * process.stdout.write(`${JSON.stringify(demoJson(checks, streamed, 50, seconds))}\n`);
 */
export function demoJson(c: DemoChecks, s: DemoStream, stepMs: number, seconds: number) {
  const [first, second] = s.epochs;
  const wall = s.epochs.reduce((t, e) => t + e.stats.seconds, 0);
  const waited = s.epochs.reduce((t, e) => t + e.gpu_idle_ratio * e.stats.seconds, 0);
  return {
    edge: c.edge,
    prefix: c.prefix,
    files: c.pushed.files,
    pushed_bytes: c.pushed.bytes,
    push_failures: c.pushed.failed,
    reads: c.reads,
    read_bytes: c.readBytes,
    mismatches: c.mismatches,
    table_generation: c.table?.generation ?? null,
    table_wait_s: c.table ? round(c.table.seconds) : null,
    epochs: s.epochs.length,
    step_ms: stepMs,
    clips: s.epochs.reduce((n, e) => n + e.stats.clips, 0),
    frames: s.epochs.reduce((n, e) => n + e.stats.frames, 0),
    first_batch_s: round(first?.first_batch_s ?? NaN),
    /** Share of the run after each epoch's first batch that a GPU taking `step_ms` per batch would have waited for data. */
    gpu_idle_ratio: round(wall > 0 ? waited / wall : 0, 4),
    bytes_fetched: first?.stats.bytes_fetched ?? 0,
    bytes_needed: first?.stats.bytes_needed ?? 0,
    epoch2_cache_hit_ratio: second ? round(second.stats.cache_hit_ratio, 4) : null,
    labeled: s.epochs.reduce((n, e) => n + e.labeled, 0),
    flags: sumFlags(s.epochs),
    errors: s.epochs.reduce((n, e) => n + errorCount(e), 0),
    preview: s.preview?.path ?? null,
    seconds: round(seconds),
    per_epoch: s.epochs.map((e) => ({
      ...e.stats,
      epoch: e.epoch + 1,
      table_generation: e.generation ?? null,
      first_batch_s: round(e.first_batch_s),
      gpu_idle_ratio: round(e.gpu_idle_ratio, 4),
    })),
  };
}

function epochLines(e: DemoEpoch, stepMs: number): string[] {
  const s = e.stats;
  const rate = (n: number) => (s.seconds > 0 ? (n / s.seconds).toFixed(1) : "0");
  const head = `  epoch ${e.epoch + 1} (${e.epoch === 0 ? "cold" : "warm"}): ${s.clips} clips, ${s.frames} frames in ${s.seconds.toFixed(2)} s on ${s.device}`;
  const plan = e.generation === undefined ? "every object's index" : `the dataset table (generation ${e.generation})`;
  const lines = [
    `${head}: ${rate(s.clips)} clips/s, ${rate(s.frames)} frames/s, planned from ${plan}`,
    `    first batch after ${Number.isFinite(e.first_batch_s) ? e.first_batch_s.toFixed(2) : "-"} s, then ${
      stepMs > 0
        ? `GPU idle ${pct(e.gpu_idle_ratio)} at a ${stepMs} ms step (the share of the time a GPU would have waited for data)`
        : `waited for data ${pct(e.gpu_idle_ratio)} of the time with no training step (fetch and decode set the pace)`
    }`,
  ];
  if (e.epoch === 0) {
    const r = s.bytes_needed > 0 ? s.bytes_fetched / s.bytes_needed : undefined;
    // Above 1: whole blocks and prefetch; below: GOPs that clips shared were fetched once and fed to more than one decode run.
    const why =
      r === undefined
        ? ""
        : r >= 1
          ? `: the cache reads whole ${DEMO_STREAM.blockSize >> 10} KiB blocks and prefetches the plan`
          : ": clips that share a GOP fetched its bytes once";
    lines.push(
      `    fetched ${mb(s.bytes_fetched)} from the edge for ${mb(s.bytes_needed)} of GOP bytes the clips needed (${r === undefined ? "-" : `${r.toFixed(2)}×`}${why})`,
    );
  } else {
    lines.push(`    cache hits ${pct(s.cache_hit_ratio)}, ${mb(s.bytes_fetched)} fetched from the edge`);
  }
  return lines;
}

/**
 * The human summary of a demo run.
 *
 * @example
 * process.stdout.write(demoText(checks, streamed, 50, seconds));
 */
export function demoText(c: DemoChecks, s: DemoStream, stepMs: number, seconds: number): string {
  const flags = Object.entries(sumFlags(s.epochs)).sort((a, b) => b[1] - a[1]);
  const labeled = s.epochs.reduce((n, e) => n + e.labeled, 0);
  const errors = s.epochs.flatMap((e) =>
    Object.entries(e.stats.errors).map(([code, n]) => `${code} ×${n} (epoch ${e.epoch + 1})`),
  );
  const { frames, size, batch } = DEMO_STREAM;
  return (
    [
      `ec demo: ${c.pushed.files} videos, ${mb(c.pushed.bytes)} pushed to ${c.edge} in ${c.pushed.seconds.toFixed(2)} s${c.pushed.failed ? `, ${c.pushed.failed} PUSH FAILURES` : ""}`,
      `  ${c.reads} signed reads (${mb(c.readBytes)}) checked byte for byte: ${c.mismatches === 0 ? "all exact" : `${c.mismatches} MISMATCHES`}`,
      c.table
        ? `  dataset table generation ${c.table.generation} (${c.table.objects} objects, built by the edge's indexing queue) ready ${c.table.seconds.toFixed(1)} s after the push`
        : "  no dataset table yet: the edge's indexing queue had not published one",
      `  a training run of ${s.epochs.length} epochs: batches of ${batch} clips x ${frames} frames at ${size[0]}x${size[1]}, ${stepMs > 0 ? `a simulated ${stepMs} ms training step per batch` : "no training step (--step-ms 0)"}`,
      ...s.epochs.flatMap((e) => epochLines(e, stepMs)),
      `  labels: ${labeled} clips checked by the built-in labelers; ${flags.length === 0 ? "none flagged" : `flagged ${flags.map(([f, n]) => `${f} ×${n}`).join(", ")}`}`,
      `  errors: ${errors.length === 0 ? "none" : errors.join(", ")}`,
      ...(s.preview
        ? [`  first batch, as the training loop got it: ${s.preview.path} (${s.preview.width}x${s.preview.height} px)`]
        : []),
      `  ${seconds.toFixed(1)} s in all`,
    ].join("\n") + "\n"
  );
}
