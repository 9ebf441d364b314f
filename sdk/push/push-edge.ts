/**
 * Uploads a directory through the edge's PUT, a few files at a time, retrying network errors
 * and 5xx with backoff. The library behind `ec push DIR PREFIX` and the benchmarks.
 */
import { createReadStream } from "node:fs";
import { extname } from "node:path";
import { Transform } from "node:stream";
import { request } from "undici";
import { encodeKeyPath } from "../../common/keys.js";
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
  throw lastError instanceof PushError
    ? lastError
    : new PushError(key, String((lastError as Error)?.message ?? lastError), { cause: lastError });
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
