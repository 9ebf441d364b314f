/**
 * `ec inspect URL [--token T] [--json]`: what a dataset holds (objects by kind, bytes, codecs,
 * resolutions, frame rates, durations, errors), from its verified manifest and each object's
 * index. `ec inspect URL --index NAME [--json]`: one object's index; with --json every sample.
 */
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { describeReceived, EcError } from "../../common/errors.js";
import { mapLimit } from "../../common/limiter.js";
import type { ManifestClientOptions } from "../../common/manifest-client.js";
import { indexToJson, notStreamed, summarizeIndex } from "../../common/media-index/index.js";
import type { IndexV1 } from "../../common/schema/index.js";
import { InvalidOptionError } from "../errors.js";
import { BUCKET_FLAGS, BUCKET_FLAGS_USAGE, bucketOptions } from "./bucket-flags.js";
import { openCatalog, type Catalog, type CatalogObject } from "./inspect-catalog.js";

const USAGE = `usage: ec inspect URL [--token T] [--json] [--concurrency N] ${BUCKET_FLAGS_USAGE}
       ec inspect URL --index NAME [--token T] [--json]
URL is http(s)://HOST/v1/datasets/PREFIX, r2://ACCOUNT_ID/BUCKET/PREFIX, s3://BUCKET/PREFIX, or a local directory
(an absolute path or file:///PATH), as for ec stream; NAME is relative to PREFIX (or the directory). The token defaults to $EC_TOKEN; bucket settings come from the flags, else AWS_ENDPOINT_URL_S3, AWS_REGION
and R2_ACCESS_KEY_ID/R2_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY).
`;

/** Counts of a value, most frequent first. */
type Tally = Record<string, number>;

export interface DatasetSummary {
  dataset: string;
  objects: number;
  bytes: number;
  byKind: Tally;
  codecs: Tally;
  resolutions: Tally;
  frameRates: Tally;
  frames: number;
  /** Seconds of video: total, shortest, longest. */
  duration: { total: number; min: number; max: number };
  errors: { key: string; code: string; message: string }[];
}

function bump(t: Tally, k: string): void {
  t[k] = (t[k] ?? 0) + 1;
}

function sorted(t: Tally): Tally {
  return Object.fromEntries(Object.entries(t).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
}

/**
 * Folds a dataset's indexes into the summary `ec inspect` prints.
 *
 * @example
 * const summary = summarizeDataset("gameplay", indexes);
 */
export function summarizeDataset(dataset: string, indexes: readonly IndexV1[]): DatasetSummary {
  const s: DatasetSummary = {
    dataset,
    objects: indexes.length,
    bytes: 0,
    byKind: {},
    codecs: {},
    resolutions: {},
    frameRates: {},
    frames: 0,
    duration: { total: 0, min: Number.POSITIVE_INFINITY, max: 0 },
    errors: [],
  };
  for (const index of indexes) {
    s.bytes += index.size;
    bump(s.byKind, index.kind);
    const why = notStreamed(index);
    if (why) s.errors.push({ key: index.key, ...why });
    const v = index.video;
    if (v) {
      bump(s.codecs, v.codec);
      bump(s.resolutions, `${v.width}x${v.height}`);
      bump(s.frameRates, String(Math.round(v.fps * 1000) / 1000));
      s.frames += v.frameCount;
      s.duration.total += v.duration;
      s.duration.min = Math.min(s.duration.min, v.duration);
      s.duration.max = Math.max(s.duration.max, v.duration);
    }
    if (index.image) bump(s.resolutions, `${index.image.width}x${index.image.height}`);
  }
  if (s.duration.min === Number.POSITIVE_INFINITY) s.duration.min = 0;
  return {
    ...s,
    byKind: sorted(s.byKind),
    codecs: sorted(s.codecs),
    resolutions: sorted(s.resolutions),
    frameRates: sorted(s.frameRates),
  };
}

const bytesText = (n: number) =>
  n >= 1 << 30
    ? `${(n / 2 ** 30).toFixed(2)} GiB`
    : n >= 1 << 20
      ? `${(n / 2 ** 20).toFixed(2)} MiB`
      : n >= 1024
        ? `${(n / 1024).toFixed(1)} KiB`
        : `${n} B`;
const tallyText = (t: Tally) =>
  Object.entries(t)
    .map(([k, n]) => `${k} (${n})`)
    .join(", ") || "-";

function printDataset(s: DatasetSummary): void {
  const lines = [
    `dataset      ${s.dataset}`,
    `objects      ${s.objects} (${tallyText(s.byKind)})`,
    `bytes        ${bytesText(s.bytes)} (${s.bytes})`,
    `codecs       ${tallyText(s.codecs)}`,
    `resolutions  ${tallyText(s.resolutions)}`,
    `frame rates  ${tallyText(s.frameRates)}`,
    `video        ${s.frames} frames, ${s.duration.total.toFixed(2)} s (shortest ${s.duration.min.toFixed(2)} s, longest ${s.duration.max.toFixed(2)} s)`,
    `errors       ${s.errors.length}`,
    ...s.errors.map((e) => `  ${e.key}: ${e.code}: ${e.message}`),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

async function inspectDataset(catalog: Catalog, json: boolean, concurrency: number): Promise<number> {
  const objects: CatalogObject[] = [];
  for await (const page of catalog.pages()) objects.push(...page);
  const bar = new cliProgress.SingleBar(
    { format: "indexing {bar} {value}/{total} objects", stream: process.stderr, noTTYOutput: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(objects.length, 0);
  const indexes = await mapLimit(objects, concurrency, async (o) => {
    try {
      return await catalog.index(o);
    } catch (err) {
      // One unreachable index is reported like a bad object, not a failed inspection.
      const e = err instanceof EcError ? err : new EcError("ERR_INDEX_FETCH", String(err));
      return {
        version: 1,
        key: o.key,
        etag: o.etag,
        size: o.size,
        kind: "error",
        error: { code: e.code, message: e.message },
      } satisfies IndexV1;
    } finally {
      bar.increment();
    }
  });
  bar.stop();
  const summary = summarizeDataset(catalog.name, indexes);
  if (json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  else printDataset(summary);
  return 0;
}

async function inspectOne(catalog: Catalog, name: string, json: boolean): Promise<number> {
  const { prefix } = catalog;
  const relative = name.replace(/^\/+/, "");
  const key = prefix ? `${prefix}/${relative}` : relative;
  let found: CatalogObject | undefined;
  for await (const page of catalog.pages()) {
    found = page.find((o) => o.key === key);
    if (found) break;
  }
  if (!found)
    throw new EcError("ERR_NOT_FOUND", `No object ${JSON.stringify(name)} in dataset ${JSON.stringify(catalog.name)}`);
  const index = await catalog.index(found);
  if (json) {
    process.stdout.write(`${JSON.stringify(indexToJson(index))}\n`);
    return index.kind === "error" ? 1 : 0;
  }
  const s = summarizeIndex(index);
  const v = index.video;
  const gops = s.gopLengths;
  const lines = [
    `key          ${index.key}`,
    `kind         ${index.kind}`,
    `size         ${bytesText(index.size)} (${index.size})`,
    `etag         ${index.etag}`,
    ...(index.error ? [`error        ${index.error.code}: ${index.error.message}`] : []),
    ...(v
      ? [
          `codec        ${v.codec} (${v.codecString}), track ${v.trackId}, extradata ${v.extradata.length} B`,
          `video        ${v.width}x${v.height}, ${Math.round(v.fps * 1000) / 1000} fps, ${v.duration.toFixed(3)} s, timescale ${v.timescale}`,
          `samples      ${s.samples}`,
          `frames       ${v.frameCount}${s.samples > v.frameCount ? ` shown (the edit list drops ${s.samples - v.frameCount} decoded samples)` : ""}, rotation ${v.rotation ?? 0}°`,
          ...(index.moreVideo?.length
            ? [`tracks       ${1 + index.moreVideo.length} video (option track: 0-${index.moreVideo.length})`]
            : []),
          ...(v.mpegts ? [`transport    MPEG-TS, PID ${v.mpegts.pid}, ${v.mpegts.packetSize}-byte packets`] : []),
          `keyframes    ${s.keyframes}`,
          `GOP lengths  min ${Math.min(...gops)}, max ${Math.max(...gops)}, mean ${(s.samples / Math.max(1, gops.length)).toFixed(1)}: ${gops.slice(0, 32).join(" ")}${gops.length > 32 ? " …" : ""}`,
        ]
      : []),
    ...(index.image
      ? [
          `image        ${index.image.format} ${index.image.width}x${index.image.height}, ${index.image.channels} channels`,
        ]
      : []),
    ...(index.array
      ? [`array        ${index.array.dtype} (${index.array.shape.join(", ")}), data at byte ${index.array.dataOffset}`]
      : []),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return index.kind === "error" ? 1 : 0;
}

/**
 * Entry point of `ec inspect`; returns the exit code (0 ok, 1 failure or a bad object, 2 usage).
 *
 * @example
 * process.exitCode = await main(["http://127.0.0.1:8787/v1/datasets/gameplay", "--json"]);
 */
export async function main(argv: string[]): Promise<number> {
  let values, positionals;
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        token: { type: "string" },
        index: { type: "string" },
        json: { type: "boolean", default: false },
        concurrency: { type: "string", default: "8" },
        ...BUCKET_FLAGS,
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (err) {
    process.stderr.write(`ec inspect: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    if (positionals.length !== 1)
      throw new InvalidOptionError(`Expected one dataset URL but received ${positionals.length}`);
    const concurrency = Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) {
      throw new InvalidOptionError(
        `Expected an integer from 1 to 256 for --concurrency but received ${describeReceived(values.concurrency)}`,
      );
    }
    const client: ManifestClientOptions = { token: values.token ?? process.env.EC_TOKEN };
    const catalog = await openCatalog(positionals[0]!, client, bucketOptions(values));
    try {
      return values.index !== undefined
        ? await inspectOne(catalog, values.index, values.json)
        : await inspectDataset(catalog, values.json, concurrency);
    } finally {
      await catalog.close();
    }
  } catch (err) {
    const e = err instanceof EcError ? err : undefined;
    process.stderr.write(`ec inspect: ${e ? `${e.code}: ` : ""}${(err as Error).message}\n`);
    if (err instanceof InvalidOptionError) process.stderr.write(USAGE);
    return err instanceof InvalidOptionError ? 2 : 1;
  }
}
