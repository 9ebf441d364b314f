/**
 * `ec push DIR PREFIX [--edge URL] [--token T] [--concurrency N] [--json]`: uploads every file
 * under DIR to PREFIX/<relative path> through the edge's PUT, a few at a time, with a progress
 * bar on stderr and a summary at the end (the library is sdk/push/).
 */
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { keyProblem } from "../../common/keys.js";
import { reportErrors } from "../dev/cli-report.js";
import { resolveEdge, resolveToken } from "../dev/connection.js";
import { InvalidOptionError } from "../errors.js";
import { pushDirWithProgress } from "../push/push-edge.js";
import { expectDirectory, reportPush } from "./push-common.js";

const USAGE =
  "usage: ec push DIR PREFIX [--edge URL] [--token T] [--concurrency N] [--json]\n       ec push DIR r2://ACCOUNT_ID/BUCKET/PREFIX | s3://BUCKET/PREFIX [--s3-endpoint URL] (see ec push s3:// --help)\n";

function parseConcurrency(raw: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 256))
    throw new InvalidOptionError(
      `Expected an integer from 1 to 256 for --concurrency but received ${describeReceived(raw)}`,
    );
  return n;
}

/**
 * @example
 * await main(["./videos", "gameplay", "--json"]);
 */
export async function main(argv: string[]): Promise<number> {
  // r2:// and s3:// targets (or --bucket) go straight to the bucket over the S3 API.
  const bucket = await import("./push-s3.js");
  if (bucket.isBucketPush(argv)) return bucket.main(argv);
  return reportErrors("push", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      edge: { type: "string" },
      token: { type: "string" },
      concurrency: { type: "string", default: "8" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 2)
    throw new InvalidOptionError(`Expected DIR and PREFIX but received ${positionals.length} arguments`);
  const [dir, rawPrefix] = positionals as [string, string];
  const prefix = rawPrefix.replace(/\/+$/, "");
  const prefixProblem = keyProblem(prefix);
  if (prefixProblem) throw new InvalidOptionError(prefixProblem.replace("object key", "PREFIX"));
  await expectDirectory(dir);
  const token = resolveToken(values.token);
  if (!token)
    throw new InvalidOptionError(
      "Expected a token from --token, EC_TOKEN or the project's .dev.vars (run `ec dev` once) but found none",
    );
  const edge = resolveEdge(values.edge);
  const concurrency = parseConcurrency(values.concurrency);

  const summary = await pushDirWithProgress({ dir, prefix, edge, token, concurrency });
  return reportPush(summary, values.json, `${summary.files} files`, `${edge}/v1/objects/${prefix}/`);
}
