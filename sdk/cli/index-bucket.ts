/**
 * `ec index s3://BUCKET/PREFIX | r2://ACCOUNT_ID/BUCKET/PREFIX [--shard I/N | --publish]`: builds
 * the bucket's own dataset table (`_ec/table/v1/{root}/`) without an edge, so that every open
 * plans from it instead of listing and indexing on its own. Alone it indexes the whole root on
 * this machine and publishes; `--shard I/N` indexes one of N parts (a Slurm array task, a
 * Kubernetes indexed Job's pod), the last to finish publishing where it holds the signing key;
 * `--publish` publishes from the shards' records or names the shards still missing. Every publish,
 * and `--gc` alone, then deletes old generations and what only they named, as the edge does.
 */
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { tableRoot } from "../../common/dataset-table/entry.js";
import { PAGE_TARGET } from "../../common/dataset-table/generation.js";
import { DEFAULT_RETENTION } from "../../common/dataset-table/retention.js";
import { describeReceived } from "../../common/errors.js";
import { type ManifestSigner, manifestSigner } from "../../common/manifest-sign.js";
import { reportErrors } from "../dev/cli-report.js";
import { InvalidOptionError, SdkError } from "../errors.js";
import { BUCKET_FLAGS, BUCKET_FLAGS_USAGE, bucketOptions, openBucketSource } from "./bucket-flags.js";

export const BUCKET_USAGE = `usage: ec index s3://BUCKET/PREFIX | r2://ACCOUNT_ID/BUCKET/PREFIX [--shard I/N | --publish | --gc] [--page-target N] [--keep-generations N] [--keep-seconds S] [--json]
                ${BUCKET_FLAGS_USAGE}
  builds the bucket's own dataset table of PREFIX's root (its first path segment) under _ec/table/v1/ROOT/
  (no flag)       index every object on this machine, then publish the table
  --shard I/N     index the I-th of N parts (0 <= I < N) and store its pages; the last part to finish publishes
                  where EC_MANIFEST_KEY is set; rerun a part that died alone: chunks already recorded are skipped
  --publish       publish the table from the parts' records; ERR_INDEX_SHARDS_INCOMPLETE names unfinished parts
  --page-target N entries a page is cut to (default ${PAGE_TARGET}); every part and the publish take the same
  --gc            only delete old generations and the table objects no kept generation names (every publish does it too)
  --keep-generations N, --keep-seconds S
                  what stays readable, as the edge keeps it: the newest N generations (default 16,
                  EC_TABLE_KEEP_GENERATIONS) and every one younger than S seconds (default 604800, EC_TABLE_KEEP_SECONDS);
                  table objects younger than S are never deleted
  EC_MANIFEST_KEY: base64 PKCS#8 DER of the Ed25519 key that signs the table (openssl genpkey -algorithm ed25519 -outform DER | base64 -w0)
`;

/**
 * @example
 * await main(["s3://videos/gameplay", "--shard", "2/4", "--json"]);
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("index", BUCKET_USAGE, () => run(argv));
}

/** The signer of the table's heads from EC_MANIFEST_KEY; undefined where it is not set and `required` is false. */
async function signerFromEnv(required: boolean): Promise<ManifestSigner | undefined> {
  const key = process.env.EC_MANIFEST_KEY;
  if (!key) {
    if (!required) return undefined;
    throw new InvalidOptionError(
      "Expected EC_MANIFEST_KEY (base64 PKCS#8 DER of an Ed25519 private key: openssl genpkey -algorithm ed25519 -outform DER | base64 -w0) to sign the table but found none",
    );
  }
  try {
    return await manifestSigner(key);
  } catch {
    throw new InvalidOptionError(
      "Expected EC_MANIFEST_KEY to be base64 PKCS#8 DER of an Ed25519 private key but it does not import as one",
    );
  }
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...BUCKET_FLAGS,
      shard: { type: "string" },
      publish: { type: "boolean", default: false },
      gc: { type: "boolean", default: false },
      "keep-generations": { type: "string" },
      "keep-seconds": { type: "string" },
      "page-target": { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(BUCKET_USAGE);
    return 0;
  }
  if (positionals.length !== 1)
    throw new InvalidOptionError(`Expected one dataset URL but received ${positionals.length} arguments`);
  const { parseShard } = await import("../source/s3/table-shards.js");
  let part = { shard: 0, of: 1 };
  if (values.shard !== undefined) {
    const parsed = parseShard(values.shard);
    if (!parsed)
      throw new InvalidOptionError(
        `Expected --shard I/N with N >= 1 and I from 0 to N - 1 (e.g. 2/4) but received ${describeReceived(values.shard)}`,
      );
    part = parsed;
  }
  if ([values.shard !== undefined, values.publish, values.gc].filter(Boolean).length > 1)
    throw new InvalidOptionError("Expected one of --shard I/N, --publish and --gc but received more");
  const keep = {
    generations: count(
      values["keep-generations"],
      process.env.EC_TABLE_KEEP_GENERATIONS,
      DEFAULT_RETENTION.generations,
      "--keep-generations",
      1,
    ),
    seconds: count(
      values["keep-seconds"],
      process.env.EC_TABLE_KEEP_SECONDS,
      DEFAULT_RETENTION.seconds,
      "--keep-seconds",
      0,
    ),
  };
  const target = values["page-target"] ?? String(PAGE_TARGET);
  if (!/^\d{1,7}$/.test(target) || Number(target) < 1)
    throw new InvalidOptionError(
      `Expected a positive integer for --page-target but received ${describeReceived(values["page-target"])}`,
    );
  const pageTarget = Number(target);
  const url = positionals[0]!;
  const source = await openBucketSource(url, bucketOptions(values));
  try {
    const prefix = source.bucket.location.prefix.replace(/\/+$/, "");
    const root = prefix ? tableRoot(`${prefix}/`) : undefined;
    if (root === undefined)
      throw new InvalidOptionError(
        `Expected a dataset URL with a prefix (s3://BUCKET/PREFIX): the table is kept per root, its first segment, but received ${describeReceived(url)}`,
      );
    const started = performance.now();
    const { collectBucketTable } = await import("../source/s3/table-collect.js");
    const collect = () => collectBucketTable(source.bucket, root, keep);
    if (values.gc) {
      const collected = await collect();
      report(values.json, { dataset: url, root, collected, seconds: (performance.now() - started) / 1000 });
      return 0;
    }
    // Alone or publishing: the key is needed, so checked before any work; a shard publishes only with it.
    const signer = await signerFromEnv(values.shard === undefined);
    const publish = async (of?: number) => {
      const { publishShards } = await import("../source/s3/shard-publish.js");
      const done = await publishShards(source.bucket, {
        root,
        pageTarget,
        signer: signer!,
        url,
        ...(of === undefined ? {} : { of }),
      });
      // Each publish drops what the retention no longer keeps, as the edge's publisher does.
      return { ...done, collected: await collect() };
    };
    if (values.publish) {
      const done = await publish();
      report(values.json, { dataset: url, root, ...done, seconds: (performance.now() - started) / 1000 });
      return 0;
    }
    const { finishedShards, indexShard } = await import("../source/s3/shard-index.js");
    const bar = new cliProgress.SingleBar(
      {
        stream: process.stderr,
        format: `index ${part.shard}/${part.of} |{bar}| {value} objects ({indexed} indexed, {skipped} chunks done before)`,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    let objects = 0;
    let indexed = 0;
    let skipped = 0;
    // The listing arrives with the work, so the total is known only at the end: the bar runs one chunk ahead.
    bar.start(pageTarget, 0, { indexed, skipped });
    let result;
    try {
      result = await indexShard(source, {
        root,
        ...part,
        pageTarget,
        onChunk: (fresh, n) => {
          objects += n;
          if (fresh) indexed += n;
          else skipped++;
          bar.setTotal(objects + pageTarget);
          bar.update(objects, { indexed, skipped });
        },
      });
    } finally {
      bar.stop();
    }
    const finished = await finishedShards(source.bucket, root, part.of);
    let published: Awaited<ReturnType<typeof publish>> | { skipped: string } | undefined;
    if (finished.length === part.of) {
      if (!signer) published = { skipped: "EC_MANIFEST_KEY is not set here: run `ec index URL --publish` where it is" };
      else
        try {
          published = await publish(part.of);
        } catch (err) {
          // Another shard's chunks went missing since its mark (the bucket changed): the explicit publish names it.
          if (!(err instanceof SdkError && err.code === "ERR_INDEX_SHARDS_INCOMPLETE")) throw err;
          published = { skipped: err.message };
        }
    }
    report(values.json, {
      dataset: url,
      root,
      shard: part.shard,
      of: part.of,
      ...result,
      finished: finished.length,
      ...(published ? { publish: published } : {}),
      seconds: (performance.now() - started) / 1000,
    });
    return 0;
  } finally {
    await source.close();
  }
}

/** A whole number from a flag, else from the environment, else `fallback`; at least `least`. */
function count(flag: string | undefined, envValue: string | undefined, fallback: number, name: string, least: number) {
  const text = flag ?? envValue;
  if (text === undefined || text === "") return fallback;
  if (!/^\d{1,10}$/.test(text) || Number(text) < least)
    throw new InvalidOptionError(
      `Expected a whole number of at least ${least} for ${name} but received ${describeReceived(text)}`,
    );
  return Number(text);
}

function report(json: boolean, summary: Record<string, unknown>): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  const collected = (summary.collected ?? (summary.publish as Record<string, unknown> | undefined)?.collected) as
    | { dropped: number[]; pages: number; records: number }
    | undefined;
  if (summary.collected && summary.shard === undefined && summary.generation === undefined) {
    process.stdout.write(`${String(summary.root)}'s table: ${collectedLine(collected!)}`);
    return;
  }
  const s = summary as Record<string, number | string | undefined> & { publish?: Record<string, unknown> };
  const seconds = Number(s.seconds).toFixed(2);
  if (s.shard === undefined) {
    process.stdout.write(
      s.published
        ? `published generation ${s.generation} of ${s.root}'s table: ${s.objects} objects in ${s.pages} pages from ${s.of} shard(s) (${seconds} s)\n`
        : `generation ${s.generation} of ${s.root}'s table already names these ${s.pages} pages: nothing to publish (${seconds} s)\n`,
    );
    if (collected) process.stdout.write(collectedLine(collected));
    return;
  }
  process.stdout.write(
    `shard ${s.shard}/${s.of}: ${s.mine} of ${s.chunks} chunks (${s.objects} objects); indexed ${s.indexed} (${s.objectsIndexed} objects, ${s.pagesWritten} pages), ${s.skipped} recorded before; ${s.finished} of ${s.of} shards finished (${seconds} s)\n`,
  );
  const p = s.publish;
  if (p && "skipped" in p) process.stdout.write(`not published: ${String(p.skipped)}\n`);
  else if (p)
    process.stdout.write(
      `published generation ${String(p.generation)} of ${s.root}'s table: ${String(p.objects)} objects in ${String(p.pages)} pages\n`,
    );
  if (collected) process.stdout.write(collectedLine(collected));
}

const collectedLine = (c: { dropped: number[]; pages: number; records: number }) =>
  `old generations deleted: ${c.dropped.length} (${c.pages} page objects, ${c.records} chunk records no kept generation names)\n`;
