/**
 * `ec index URL [--token T] [--json]`: queues every object of an existing dataset prefix for
 * background indexing at the edge (buckets filled before ec was deployed, or behind its back),
 * one listing page at a time, with a progress bar; the edge's queue builds the dataset table.
 * With an s3:// or r2:// URL, index-bucket.ts builds the bucket's table itself, sharded or not.
 */
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { MAX_MANIFEST_PAGE } from "../../common/shards.js";
import { enqueueDataset } from "../../common/table-client.js";
import { reportErrors } from "../dev/cli-report.js";
import { resolveToken } from "../dev/connection.js";
import { InvalidOptionError } from "../errors.js";

const USAGE =
  "usage: ec index URL [--token T] [--json]\n  URL: https://EDGE/v1/datasets/PREFIX\n" +
  "   or: ec index s3://BUCKET/PREFIX | r2://ACCOUNT_ID/BUCKET/PREFIX [--shard I/N | --publish] (ec index s3:// --help)\n";

/**
 * @example
 * await main(["http://127.0.0.1:8787/v1/datasets/gameplay", "--json"]);
 */
export async function main(argv: string[]): Promise<number> {
  // A bucket URL: this machine (or one shard of a cluster) builds the bucket's own table.
  if (argv.some((a) => /^(s3|r2):\/\//.test(a))) return (await import("./index-bucket.js")).main(argv);
  return reportErrors("index", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      token: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 1)
    throw new InvalidOptionError(`Expected one dataset URL but received ${positionals.length} arguments`);
  const url = positionals[0]!;
  if (!/^https?:\/\/[^/]+\/v1\/datasets\/.+/.test(url))
    throw new InvalidOptionError(
      `Expected a dataset URL like https://EDGE/v1/datasets/PREFIX but received ${JSON.stringify(url)}`,
    );
  const token = resolveToken(values.token);
  if (!token)
    throw new InvalidOptionError(
      "Expected a token from --token, EC_TOKEN or the project's .dev.vars (run `ec dev` once) but found none",
    );

  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: "index |{bar}| {value} objects queued{more}", hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  const started = performance.now();
  let done = 0;
  // The listing is paged, so the total is known only at the end: the bar runs one page ahead.
  bar.start(MAX_MANIFEST_PAGE, 0, { more: ", listing…" });
  let summary;
  try {
    summary = await enqueueDataset(url, {
      token,
      onPage: (n, more) => {
        done += n;
        bar.setTotal(more ? done + MAX_MANIFEST_PAGE : Math.max(done, 1));
        bar.update(done, { more: more ? ", listing…" : "" });
      },
    });
  } finally {
    bar.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  if (values.json)
    process.stdout.write(
      `${JSON.stringify({ dataset: url, enqueued: summary.enqueued, pages: summary.pages, seconds })}\n`,
    );
  else
    process.stdout.write(
      `queued ${summary.enqueued} objects of ${url} for indexing (${summary.pages} listing pages, ${seconds.toFixed(2)} s); the dataset table follows as the queue drains\n`,
    );
  return 0;
}
