/**
 * Uploads a directory through the edge's PUT, a few files at a time, retrying network errors
 * and 5xx with backoff. The library behind `ec push DIR PREFIX` and the benchmarks.
 */
import { createReadStream } from "node:fs";
import { extname } from "node:path";
import { Transform } from "node:stream";
import { request } from "undici";
import { encodeKeyPath } from "../../common/keys.js";
import { retry, TransientError } from "../../common/retry-policy.js";
import { isTransientStatus } from "../../common/transient-errors.js";
import { OBJECTS_ROUTE } from "../../common/sign.js";
import { SdkError } from "../errors.js";
import { pushProgress } from "./progress.js";
import { CONTENT_TYPES, runPush, type PushHooks } from "./run-push.js";

/** One upload failed after its retries. */
export class PushError extends SdkError {
  constructor(key: string, message: string, options?: { cause?: unknown }) {
    super("ERR_PUSH_FAILED", `${key}: ${message}`, options);
    this.name = "PushError";
  }
}

export interface PushOptions extends PushHooks {
  readonly dir: string;
  /** Key prefix without a trailing slash, e.g. "gameplay". */
  readonly prefix: string;
  readonly edge: string;
  readonly token: string;
  /** Uploads in flight at once; default 8. */
  readonly concurrency?: number;
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

/** Uploads retry network errors and 408/429/5xx answers (common/retry-policy.ts) twice, a second or so apart at most. */
const PUT_RETRY = { retries: 2, minDelayMs: 250, maxDelayMs: 2000 };

async function putFile(opts: PushOptions, key: string, path: string, size: number): Promise<PushedFile> {
  try {
    return await retry(async () => {
      let sent = 0;
      try {
        return await putOnce(opts, key, path, size, (n) => (sent += n));
      } catch (err) {
        // Undo this attempt's share of the progress: the next one sends the file again.
        opts.onProgress?.({ bytes: -sent });
        throw err;
      }
    }, PUT_RETRY);
  } catch (err) {
    const last = err instanceof TransientError && err.cause instanceof PushError ? err.cause : err;
    throw last instanceof PushError
      ? last
      : new PushError(key, String((last as Error)?.message ?? last), { cause: last });
  }
}

/** One PUT of a file, its body a fresh stream of it; a 408/429/5xx answer is a TransientError. */
async function putOnce(
  opts: PushOptions,
  key: string,
  path: string,
  size: number,
  onSent: (bytes: number) => void,
): Promise<PushedFile> {
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      onSent(chunk.length);
      opts.onProgress?.({ bytes: chunk.length });
      done(null, chunk);
    },
  });
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
  throw isTransientStatus(res.statusCode) ? new TransientError(error.message, { cause: error }) : error;
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
