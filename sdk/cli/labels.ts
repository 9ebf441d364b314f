/**
 * `ec labels URL`: streams a dataset through the labelers (filter "tag": nothing is dropped)
 * and prints a summary — totals, clips per flag, worst objects, histograms — as text tables,
 * or one JSON document with `--json`; `--report FILE.html` also writes a standalone HTML report
 * with thumbnails (first, middle, last frame) of the worst objects' flagged clips.
 */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { describeReceived, EcError } from "../../common/errors.js";
import { InvalidOptionError } from "../errors.js";
import {
  createLabelStage,
  DirLabelCache,
  EdgeLabelCache,
  MemoryLabelCache,
  renderHtml,
  renderTable,
  summarize,
  ThumbnailCollector,
  type ClipLabels,
  type LabelCache,
  type LabeledClip,
  type LabelsSpec,
} from "../labels/index.js";
import { open } from "../open.js";
import type { OpenOptions } from "../options.js";

const USAGE = `usage: ec labels URL [--json] [--report FILE.html] [--labels NAMES|FILE.json] [--frames N] [--stride S]
                 [--limit CLIPS] [--size HxW] [--token T] [--cache URL] [--label-cache DIR] [--device cpu|auto|cuda:N]
                 [--workers N] [--worst N]

  --labels      comma-separated labeler names, or a JSON file of { name: true | { thresholds } }; default: all built-ins
  --label-cache keep label sidecars in DIR; default: the edge's /v1/labels for http(s) URLs with a token, else memory
`;

export interface LabelsArgs {
  readonly url: string;
  readonly options: OpenOptions;
  readonly json: boolean;
  readonly report: string | undefined;
  readonly labels: string | undefined;
  readonly labelCache: string | undefined;
  readonly worst: number;
}

const INT_FLAGS = ["frames", "stride", "limit", "workers"] as const;

/** Parses argv; open() validates the values it receives. */
export function parseLabelsArgs(argv: string[]): LabelsArgs {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: "boolean", default: false },
      report: { type: "string" },
      labels: { type: "string" },
      "label-cache": { type: "string" },
      token: { type: "string" },
      cache: { type: "string" },
      size: { type: "string" },
      device: { type: "string" },
      worst: { type: "string" },
      ...Object.fromEntries(INT_FLAGS.map((f) => [f, { type: "string" as const }])),
    },
  });
  if (positionals.length !== 1)
    throw new InvalidOptionError(`Expected one dataset URL but received ${positionals.length}`);
  const o: Record<string, unknown> = { shuffle: false };
  for (const f of INT_FLAGS) {
    const v = (values as Record<string, unknown>)[f] as string | undefined;
    if (v !== undefined) o[f] = /^-?\d+$/.test(v) ? Number(v) : v;
  }
  for (const f of ["token", "cache", "device"] as const) if (values[f] !== undefined) o[f] = values[f];
  if (values.size !== undefined) {
    const m = /^(\d+)x(\d+)$/.exec(values.size);
    if (!m)
      throw new InvalidOptionError(
        `Expected HxW (e.g. 144x256) for --size but received ${describeReceived(values.size)}`,
      );
    o.size = [Number(m[1]), Number(m[2])];
  } else {
    // Without a resize the decoder's own planes are labeled: luma is read in place, no RGB conversion.
    o.format = "native";
  }
  const worst = values.worst === undefined ? 10 : Number(values.worst);
  if (!Number.isInteger(worst) || worst < 0)
    throw new InvalidOptionError(
      `Expected a non-negative integer for --worst but received ${describeReceived(values.worst)}`,
    );
  return {
    url: positionals[0]!,
    options: o as OpenOptions,
    json: values.json,
    report: values.report,
    labels: values.labels,
    labelCache: values["label-cache"],
    worst,
  };
}

async function labelsSpec(raw: string | undefined): Promise<LabelsSpec> {
  if (raw === undefined) return true;
  if (raw.endsWith(".json")) {
    try {
      return JSON.parse(await readFile(raw, "utf8")) as LabelsSpec;
    } catch (err) {
      throw new InvalidOptionError(
        `Expected a readable JSON file of labeler settings for --labels but received ${describeReceived(raw)}: ${(err as Error).message}`,
      );
    }
  }
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function labelCache(a: LabelsArgs): LabelCache {
  if (a.labelCache) return new DirLabelCache(a.labelCache);
  const token = (a.options.token as string | undefined) ?? process.env.EC_TOKEN;
  if (/^https?:\/\//.test(a.url) && token) return new EdgeLabelCache({ edge: a.url, token });
  return new MemoryLabelCache();
}

/**
 * @example
 * await main(["http://127.0.0.1:8787/v1/datasets/gameplay", "--report", "labels.html"]);
 */
export async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  let args: LabelsArgs;
  let stage: ReturnType<typeof createLabelStage>;
  try {
    args = parseLabelsArgs(argv);
    stage = createLabelStage({
      labels: await labelsSpec(args.labels),
      filter: "tag",
      cache: labelCache(args),
      context: JSON.stringify({ size: args.options.size ?? null, format: args.options.format ?? "rgb24" }),
      onCacheError: (err) => process.stderr.write(`\nlabel cache: ${(err as Error).message}\n`),
    });
  } catch (err) {
    process.stderr.write(`ec labels: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const records: LabeledClip[] = [];
  let ds;
  try {
    ds = await open(args.url, {
      ...args.options,
      ...stage.hooks,
      // A clip the decoder refused is a finding of the report, not a failure of the command.
      onError: (err, clip) => {
        if (clip) records.push({ key: clip.key, start: clip.start, error: err.code });
      },
    });
  } catch (err) {
    const code = err instanceof EcError ? err.code : "ERR_OPEN_FAILED";
    process.stderr.write(`ec labels: [${code}] ${(err as Error).message}\n`);
    return err instanceof InvalidOptionError ? 2 : 1;
  }
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: "{bar} {value}/{of} clips | flagged {flagged} | cached {cached}",
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let flagged = 0;
  // Pictures of flagged clips for the HTML report, taken while their frames are at hand.
  const thumbnails = args.report ? new ThumbnailCollector() : undefined;
  // Over table pages read lazily the clip count is known only at the epoch's end: "?" until then.
  const of = Number.isFinite(ds.clipCount) ? String(ds.clipCount) : "?";
  bar.start(Number.isFinite(ds.clipCount) ? ds.clipCount : 0, 0, { flagged, cached: 0, of });
  let failed: unknown;
  try {
    for await (const batch of ds) {
      batch.clips.forEach((c, i) => {
        const labels = c.labels as ClipLabels;
        if (labels.flags.length > 0) flagged++;
        records.push({ key: c.key, start: c.start, labels });
        thumbnails?.add(c.key, c.start, labels, batch.decoded[i]?.frames ?? []);
      });
      bar.update(records.length, { flagged, cached: stage.counts.cached });
    }
  } catch (err) {
    failed = err;
  } finally {
    bar.update(records.length, { flagged, cached: stage.counts.cached });
    bar.stop();
    await ds.close();
    await stage.flush();
  }
  const summary = summarize(records, { worst: args.worst });
  if (args.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  else process.stdout.write(`${renderTable(summary)}\n`);
  if (args.report) {
    await writeFile(
      args.report,
      renderHtml(summary, { dataset: args.url, ...(thumbnails ? { thumbnails: thumbnails.byObject() } : {}) }),
    );
    process.stderr.write(`report written to ${args.report}\n`);
  }
  if (failed) {
    process.stderr.write(
      `ec labels: [${failed instanceof EcError ? failed.code : "ERR_STREAM_FAILED"}] ${(failed as Error).message}\n`,
    );
    return 1;
  }
  return 0;
}
