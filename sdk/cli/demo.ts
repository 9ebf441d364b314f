/**
 * `ec demo` (what `npm start` runs): the first hop end to end on the embedded default.
 * 1. start the local edge (workerd, persisted R2);
 * 2. make a few sample videos with ffmpeg (cached in .ec/samples) unless --videos is given;
 * 3. push them under a prefix;
 * 4. read each back through signed URLs, whole and by random ranges, byte-exact, while the edge
 *    indexes them and publishes the dataset table (waited for: open() plans from it);
 * 5. start an origin-cache and stream the dataset through it as a training run would: a simulated
 *    step per batch, two epochs (the second warm), the built-in labelers, a contact sheet of the
 *    first batch written as PNG;
 * 6. print a summary and stop everything; exit 1 on any mismatch or a failed stream.
 */
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { signedObjectUrl } from "../../common/sign.js";
import { reportErrors } from "../dev/cli-report.js";
import { startLocalEdge, type LocalEdge } from "../dev/local-edge.js";
import { stateRoot } from "../dev/project-root.js";
import { ensureSamples } from "../dev/samples.js";
import { rangesFor, rng, verifyObject, type VerifyResult } from "../dev/verify-object.js";
import { InvalidOptionError } from "../errors.js";
import { pushDirWithProgress, type PushSummary } from "../push/index.js";
import { demoJson, demoText } from "./demo-summary.js";
import { waitForTable, type TableReady } from "../dev/table-ready.js";
import { demoDatasetUrl, streamDemo } from "./stream-demo.js";

const USAGE = `usage: ec demo [--videos DIR] [--prefix P] [--ranges N] [--seed N] [--port N] [--json]
               [--step-ms MS]   (the simulated training step per batch; default 50)
               [--epochs N]     (default 2: the second is served warm by the cache)
               [--preview FILE.png] [--persist DIR]   (default .ec/demo-first-batch.png, .ec/demo-edge)
`;

interface DemoOptions {
  readonly videos: string | undefined;
  readonly prefix: string;
  readonly ranges: number;
  readonly seed: number;
  readonly port: number;
  readonly json: boolean;
  readonly stepMs: number;
  readonly epochs: number;
  readonly preview: string;
  readonly persist: string;
}

function intFlag(name: string, raw: string, min: number, max: number): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max))
    throw new InvalidOptionError(
      `Expected an integer from ${min} to ${max} for --${name} but received ${describeReceived(raw)}`,
    );
  return n;
}

function parse(argv: string[]): DemoOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      videos: { type: "string" },
      prefix: { type: "string", default: "demo" },
      ranges: { type: "string", default: "6" },
      seed: { type: "string", default: "1" },
      port: { type: "string", default: "0" },
      json: { type: "boolean", default: false },
      "step-ms": { type: "string", default: "50" },
      epochs: { type: "string", default: "2" },
      preview: { type: "string" },
      persist: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return undefined;
  if (values.preview !== undefined && !values.preview.toLowerCase().endsWith(".png")) {
    throw new InvalidOptionError(`Expected a .png file for --preview but received ${describeReceived(values.preview)}`);
  }
  return {
    videos: values.videos,
    prefix: values.prefix.replace(/\/+$/, ""),
    ranges: intFlag("ranges", values.ranges, 0, 1000),
    seed: intFlag("seed", values.seed, 0, 2 ** 31),
    port: intFlag("port", values.port, 0, 65535),
    json: values.json,
    stepMs: intFlag("step-ms", values["step-ms"], 0, 60_000),
    epochs: intFlag("epochs", values.epochs, 1, 100),
    preview: resolve(values.preview ?? join(stateRoot(), ".ec", "demo-first-batch.png")),
    persist: resolve(values.persist ?? join(stateRoot(), ".ec", "demo-edge")),
  };
}

/** Step 2: the folder to push, made of generated samples unless the user gave one. */
async function videosDir(opts: DemoOptions, say: (line: string) => void): Promise<string> {
  if (opts.videos) return resolve(opts.videos);
  const dir = join(stateRoot(), ".ec", "samples");
  say(`making sample videos with ffmpeg in ${dir} (cached)`);
  await ensureSamples(dir);
  return dir;
}

/** Step 4: every pushed object read back whole and by ranges through signed URLs. */
async function verify(
  edge: LocalEdge,
  summary: PushSummary,
  opts: DemoOptions,
  say: (line: string) => void,
): Promise<VerifyResult[]> {
  const random = rng(opts.seed);
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const results: VerifyResult[] = [];
  for (const file of summary.pushed) {
    const url = await signedObjectUrl(edge.url, file.key, exp, edge.signingKey);
    const result = await verifyObject(file.key, url, file.path, rangesFor(file.size, opts.ranges, random));
    results.push(result);
    say(
      `${result.mismatches.length === 0 ? "ok  " : "FAIL"} ${file.key}: ${result.reads} signed reads, ${file.size} bytes`,
    );
    for (const m of result.mismatches) say(`     ${m}`);
  }
  return results;
}

/** Waits for the dataset table that lists every pushed object, and says what came. */
async function awaitTable(
  edge: LocalEdge,
  prefix: string,
  pushed: PushSummary,
  say: (line: string) => void,
): Promise<TableReady | undefined> {
  if (pushed.pushed.length === 0) return undefined;
  say(`the edge indexes the ${pushed.pushed.length} objects and publishes the dataset table open() plans from`);
  const ready = await waitForTable(demoDatasetUrl(edge.url, prefix), pushed.pushed, { token: edge.token });
  say(
    ready
      ? `dataset table generation ${ready.generation} is ready (${ready.objects} objects, ${ready.seconds.toFixed(1)} s after the push): the stream plans from it`
      : "no dataset table after 60 s: the stream plans from every object's index instead",
  );
  return ready;
}

/**
 * @example
 * await main([]); // the whole first hop with generated samples
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("demo", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const opts = parse(argv);
  if (!opts) {
    process.stdout.write(USAGE);
    return 0;
  }
  const say = (line: string) => process.stderr.write(`[demo] ${line}\n`);
  const started = performance.now();

  say(`starting the local edge (workerd, persisted R2 in ${opts.persist})`);
  const edge = await startLocalEdge({
    port: opts.port,
    persistDir: opts.persist,
    quiet: true,
    // A deployed edge waits for uploads to settle before it publishes a table; the demo's few
    // videos need not keep a newcomer waiting for that.
    vars: { EC_PUBLISH_DELAY_SECONDS: "1" },
  });
  try {
    say(`edge is up at ${edge.url}`);
    const dir = await videosDir(opts, say);
    say(`pushing ${dir} to ${opts.prefix}/`);
    const pushed = await pushDirWithProgress({ dir, prefix: opts.prefix, edge: edge.url, token: edge.token });
    for (const e of pushed.errors) say(`push failed: ${e.key}: [${e.code}] ${e.message}`);
    // The edge indexes what was pushed and publishes the dataset table in the background; the
    // stream waits for it, so it plans from the table as a deployed dataset would.
    const tableReady = awaitTable(edge, opts.prefix, pushed, say);
    say(`reading every object back through signed URLs: whole, plus ${opts.ranges + 2} ranges each`);
    const results = await verify(edge, pushed, opts, say);
    const table = await tableReady;
    const streamed = await streamDemo(
      edge,
      opts.prefix,
      { epochs: opts.epochs, stepMs: opts.stepMs, preview: opts.preview },
      say,
    );

    const mismatches = results.reduce((n, r) => n + r.mismatches.length, 0);
    const checks = {
      edge: edge.url,
      prefix: opts.prefix,
      pushed,
      reads: results.reduce((n, r) => n + r.reads, 0),
      readBytes: results.reduce((n, r) => n + r.bytes, 0),
      mismatches,
      table,
    };
    const seconds = (performance.now() - started) / 1000;
    if (opts.json) process.stdout.write(`${JSON.stringify(demoJson(checks, streamed, opts.stepMs, seconds))}\n`);
    else process.stdout.write(demoText(checks, streamed, opts.stepMs, seconds));
    return mismatches === 0 && pushed.failed === 0 && pushed.files > 0 && streamed.ok ? 0 : 1;
  } finally {
    say("stopping the local edge");
    await edge.stop();
  }
}
