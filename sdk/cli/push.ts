/**
 * `ec push DIR PREFIX [--edge URL] [--token T] [--concurrency N] [--json]`: uploads every file
 * under DIR to PREFIX/<relative path> through the edge's PUT, a few at a time, with a progress
 * bar on stderr and a summary at the end.
 */
import { createReadStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { extname, join, relative, sep } from "node:path";
import { Transform } from "node:stream";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { request } from "undici";
import { describeReceived } from "../../common/errors.js";
import { encodeKeyPath, keyProblem } from "../../common/keys.js";
import { OBJECTS_ROUTE } from "../../common/sign.js";
import { reportErrors } from "../dev/cli-report.js";
import { resolveEdge, resolveToken } from "../dev/connection.js";
import { InvalidOptionError, SdkError } from "../errors.js";

const USAGE = "usage: ec push DIR PREFIX [--edge URL] [--token T] [--concurrency N] [--json]\n       ec push DIR r2://ACCOUNT_ID/BUCKET/PREFIX | s3://BUCKET/PREFIX [--s3-endpoint URL] (see ec push s3:// --help)\n";

/** Content-Type by file extension, for edge and bucket pushes alike. */
export const CONTENT_TYPES: Record<string, string> = {
  ".mp4": "video/mp4",
  ".m4v": "video/mp4",
  ".mov": "video/quicktime",
  ".mkv": "video/x-matroska",
  ".webm": "video/webm",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".png": "image/png",
  ".webp": "image/webp",
  ".json": "application/json",
};

/** One upload failed after its retries. */
export class PushError extends SdkError {
  constructor(key: string, message: string, options?: { cause?: unknown }) {
    super("ERR_PUSH_FAILED", `${key}: ${message}`, options);
    this.name = "PushError";
  }
}

export interface PushOptions {
  readonly dir: string;
  /** Key prefix without a trailing slash, e.g. "gameplay". */
  readonly prefix: string;
  readonly edge: string;
  readonly token: string;
  /** Uploads in flight at once; default 8. */
  readonly concurrency?: number;
  /** Called once with what is about to be sent, before the first byte. */
  readonly onPlan?: (files: number, bytes: number) => void;
  /** Called with each chunk's byte count as it is sent, and once per finished file. */
  readonly onProgress?: (event: { bytes: number } | { file: string }) => void;
}

export interface PushedFile {
  readonly key: string;
  readonly path: string;
  readonly size: number;
  readonly etag: string;
}

export interface PushSummary {
  readonly edge: string;
  readonly prefix: string;
  readonly files: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly failed: number;
  readonly pushed: readonly PushedFile[];
  readonly errors: readonly { key: string; code: string; message: string }[];
}

/** Every regular file under `dir`, sorted, as (absolute path, key relative to dir). */
export async function listFiles(dir: string): Promise<{ path: string; rel: string; size: number }[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = await Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e) => {
        const path = join(e.parentPath, e.name);
        return { path, rel: relative(dir, path).split(sep).join("/"), size: (await stat(path)).size };
      }),
  );
  return files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

/** What both pushes (edge and bucket) hand each file's upload, and what they report. */
export interface PushJob {
  readonly path: string;
  readonly rel: string;
  readonly size: number;
  readonly key: string;
}

export interface PushRun<T> {
  /** Uploaded files in key order. */
  readonly pushed: T[];
  readonly errors: { key: string; code: string; message: string }[];
}

/**
 * Lists DIR, checks every key before the first byte, then uploads `concurrency` files at a time;
 * a failed file is recorded with its code and the others go on.
 */
export async function runPush<T extends { key: string }>(
  dir: string,
  keyOf: (rel: string) => string,
  o: Pick<PushOptions, "onPlan" | "onProgress"> & { readonly concurrency: number },
  upload: (job: PushJob) => Promise<T>,
  failure: (err: unknown, job: PushJob) => { code: string; message: string },
): Promise<PushRun<T>> {
  const jobs: PushJob[] = (await listFiles(dir)).map((f) => ({ ...f, key: keyOf(f.rel) }));
  for (const job of jobs) {
    const problem = keyProblem(job.key);
    if (problem) throw new InvalidOptionError(`${job.path}: ${problem}`);
  }
  o.onPlan?.(jobs.length, jobs.reduce((n, j) => n + j.size, 0));
  const pushed: T[] = [];
  const errors: { key: string; code: string; message: string }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!;
      try {
        pushed.push(await upload(job));
      } catch (err) {
        errors.push({ key: job.key, ...failure(err, job) });
      }
      o.onProgress?.({ file: job.key });
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, Math.max(1, jobs.length)) }, worker));
  pushed.sort((a, b) => (a.key < b.key ? -1 : 1));
  return { pushed, errors };
}

const RETRIES = 3;

async function putFile(opts: PushOptions, key: string, path: string, size: number): Promise<PushedFile> {
  let lastError: unknown;
  for (let attempt = 0; attempt < RETRIES; attempt++) {
    let sent = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        sent += chunk.length;
        opts.onProgress?.({ bytes: chunk.length });
        done(null, chunk);
      },
    });
    try {
      const res = await request(`${opts.edge}${OBJECTS_ROUTE}${encodeKeyPath(key)}`, {
        method: "PUT",
        body: createReadStream(path).pipe(counter),
        headers: {
          authorization: `Bearer ${opts.token}`,
          "content-length": String(size),
          "content-type": CONTENT_TYPES[extname(path).toLowerCase()] ?? "application/octet-stream",
        },
      });
      const text = await res.body.text();
      if (res.statusCode === 201) {
        const body = JSON.parse(text) as { etag: string; size: number };
        return { key, path, size: body.size, etag: body.etag };
      }
      const error = new PushError(key, `the edge answered ${res.statusCode}: ${text.slice(0, 300)}`);
      if (res.statusCode < 500) throw Object.assign(error, { final: true });
      lastError = error;
    } catch (err) {
      if ((err as { final?: boolean }).final) throw err;
      lastError = err;
    }
    // Undo this attempt's share of the progress before trying again.
    opts.onProgress?.({ bytes: -sent });
    await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
  }
  throw lastError instanceof PushError ? lastError : new PushError(key, String((lastError as Error)?.message ?? lastError), { cause: lastError });
}

/**
 * Uploads every file under `dir` to `prefix/<relative path>`, `concurrency` at a time, retrying
 * network errors and 5xx with backoff. Every key is validated before the first byte is sent.
 *
 * @example
 * const summary = await pushDir({ dir: "videos", prefix: "gameplay", edge: "http://127.0.0.1:8787", token });
 */
export async function pushDir(opts: PushOptions): Promise<PushSummary> {
  const started = performance.now();
  const { pushed, errors } = await runPush(
    opts.dir,
    (rel) => `${opts.prefix}/${rel}`,
    { ...opts, concurrency: opts.concurrency ?? 8 },
    (job) => putFile(opts, job.key, job.path, job.size),
    (err) => ({ code: (err as PushError).code ?? "ERR_PUSH_FAILED", message: (err as Error).message }),
  );
  return {
    edge: opts.edge,
    prefix: opts.prefix,
    files: pushed.length,
    bytes: pushed.reduce((n, f) => n + f.size, 0),
    seconds: (performance.now() - started) / 1000,
    failed: errors.length,
    pushed,
    errors,
  };
}

/** A progress bar over the bytes of a push (drawn only on a terminal). */
export function pushProgress(totalBytes: number, totalFiles: number): {
  onProgress: NonNullable<PushOptions["onProgress"]>;
  stop(): void;
} {
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: "push |{bar}| {percentage}% | {mb}/{totalMb} MB | {files}/{totalFiles} files", hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  let bytes = 0;
  let files = 0;
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const payload = () => ({ mb: mb(bytes), totalMb: mb(totalBytes), files, totalFiles });
  bar.start(Math.max(1, totalBytes), 0, payload());
  return {
    onProgress(event) {
      if ("bytes" in event) bytes += event.bytes;
      else files++;
      bar.update(bytes, payload());
    },
    stop: () => bar.stop(),
  };
}

/**
 * {@link pushDir} with a progress bar over its bytes on stderr.
 *
 * @example
 * const summary = await pushDirWithProgress({ dir: "videos", prefix: "gameplay", edge, token });
 */
export async function pushDirWithProgress(opts: Omit<PushOptions, "onPlan" | "onProgress">): Promise<PushSummary> {
  let progress: ReturnType<typeof pushProgress> | undefined;
  try {
    return await pushDir({
      ...opts,
      onPlan: (files, bytes) => (progress = pushProgress(bytes, files)),
      onProgress: (event) => progress?.onProgress(event),
    });
  } finally {
    progress?.stop();
  }
}

function parseConcurrency(raw: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 256)) throw new InvalidOptionError(`Expected an integer from 1 to 256 for --concurrency but received ${describeReceived(raw)}`);
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
  if (positionals.length !== 2) throw new InvalidOptionError(`Expected DIR and PREFIX but received ${positionals.length} arguments`);
  const [dir, rawPrefix] = positionals as [string, string];
  const prefix = rawPrefix.replace(/\/+$/, "");
  const prefixProblem = keyProblem(prefix);
  if (prefixProblem) throw new InvalidOptionError(prefixProblem.replace("object key", "PREFIX"));
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) throw new InvalidOptionError(`Expected a directory for DIR but received ${describeReceived(dir)}`);
  const token = resolveToken(values.token);
  if (!token) throw new InvalidOptionError("Expected a token from --token, EC_TOKEN or the project's .dev.vars (run `ec dev` once) but found none");
  const edge = resolveEdge(values.edge);
  const concurrency = parseConcurrency(values.concurrency);

  const summary = await pushDirWithProgress({ dir, prefix, edge, token, concurrency });
  if (values.json) {
    const { pushed: _pushed, ...line } = summary;
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } else {
    for (const e of summary.errors) process.stderr.write(`failed ${e.key}: [${e.code}] ${e.message}\n`);
    const rate = summary.seconds > 0 ? summary.bytes / 1e6 / summary.seconds : 0;
    process.stdout.write(
      `pushed ${summary.files} files, ${(summary.bytes / 1e6).toFixed(1)} MB to ${edge}/v1/objects/${prefix}/ in ${summary.seconds.toFixed(2)} s (${rate.toFixed(1)} MB/s)` +
        (summary.failed ? `; ${summary.failed} failed` : "") +
        "\n",
    );
  }
  return summary.failed > 0 ? 1 : 0;
}
