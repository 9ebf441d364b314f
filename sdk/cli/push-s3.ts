/**
 * `ec push DIR r2://ACCOUNT/BUCKET/PREFIX | s3://BUCKET/PREFIX` (or `ec push DIR PREFIX --bucket B`):
 * uploads a directory straight to the bucket over the S3 API, multipart for large files, with a
 * progress bar on stderr and a summary at the end (the library is sdk/push/push-s3.ts).
 */
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { reportErrors } from "../dev/cli-report.js";
import { InvalidOptionError } from "../errors.js";
import { pushProgress } from "../push/progress.js";
import { pushToBucket, type BucketPushSummary } from "../push/push-s3.js";
import { expectDirectory, reportPush } from "./push-common.js";
import { BUCKET_FLAGS, BUCKET_FLAGS_USAGE, bucketOptions, isBucketUrl } from "./bucket-flags.js";

const MiB = 1 << 20;

const USAGE =
  `usage: ec push DIR r2://ACCOUNT_ID/BUCKET/PREFIX | s3://BUCKET/PREFIX ${BUCKET_FLAGS_USAGE}\n` +
  "       ec push DIR PREFIX --bucket BUCKET [--s3-endpoint URL] [--region R]\n" +
  "       [--concurrency N] [--part-size MiB] [--json]\n" +
  "credentials: R2_ACCESS_KEY_ID/R2_SECRET_ACCESS_KEY or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY\n";

/** True when `ec push` arguments name a bucket rather than an edge prefix. */
export function isBucketPush(argv: readonly string[]): boolean {
  return argv.some((a) => isBucketUrl(a) || a === "--bucket" || a.startsWith("--bucket="));
}

function positiveInt(raw: string, flag: string, max: number): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= max))
    throw new InvalidOptionError(
      `Expected an integer from 1 to ${max} for ${flag} but received ${describeReceived(raw)}`,
    );
  return n;
}

/**
 * @example
 * await main(["./videos", "s3://bucket/gameplay", "--s3-endpoint", "http://127.0.0.1:9000", "--json"]);
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("push", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...BUCKET_FLAGS,
      bucket: { type: "string" },
      concurrency: { type: "string", default: "4" },
      "part-size": { type: "string", default: "16" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 2)
    throw new InvalidOptionError(`Expected DIR and a bucket URL but received ${positionals.length} arguments`);
  const [dir, target] = positionals as [string, string];
  await expectDirectory(dir);
  let url: URL;
  if (values.bucket !== undefined) {
    if (/^[a-z0-9]+:\/\//i.test(target))
      throw new InvalidOptionError(`Expected a plain PREFIX with --bucket but received ${describeReceived(target)}`);
    url = new URL(`s3://${values.bucket}/${target.replace(/^\/+/, "")}`);
  } else if (URL.canParse(target)) {
    url = new URL(target);
  } else {
    throw new InvalidOptionError(
      `Expected r2://ACCOUNT_ID/BUCKET/PREFIX or s3://BUCKET/PREFIX but received ${describeReceived(target)}`,
    );
  }
  const s3 = bucketOptions(values);
  const concurrency = positiveInt(values.concurrency, "--concurrency", 64);
  const partSize = positiveInt(values["part-size"], "--part-size", 5 * 1024) * MiB;

  let progress: ReturnType<typeof pushProgress> | undefined;
  let summary: BucketPushSummary;
  try {
    summary = await pushToBucket({
      dir,
      url,
      s3,
      concurrency,
      partSize,
      onPlan: (files, bytes) => (progress = values.json ? undefined : pushProgress(bytes, files)),
      onProgress: (event) => progress?.onProgress(event),
    });
  } finally {
    progress?.stop();
  }
  return reportPush(summary, values.json, `${summary.files} files (${summary.multipart} multipart)`, summary.target);
}
