/**
 * What an edge push and a bucket push share: the listing of a directory, the key check before
 * the first byte, the pool of uploads, and the Content-Type of a file.
 */
import { readdir, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { keyProblem } from "../../common/keys.js";
import { InvalidOptionError } from "../errors.js";

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

/** Progress callbacks of a push, edge or bucket alike. */
export interface PushHooks {
  /** Called once with what is about to be sent, before the first byte. */
  readonly onPlan?: (files: number, bytes: number) => void;
  /** Called with each chunk's byte count as it is sent, and once per finished file. */
  readonly onProgress?: (event: { bytes: number } | { file: string }) => void;
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
  o: PushHooks & { readonly concurrency: number },
  upload: (job: PushJob) => Promise<T>,
  failure: (err: unknown, job: PushJob) => { code: string; message: string },
): Promise<PushRun<T>> {
  const jobs: PushJob[] = (await listFiles(dir)).map((f) => ({ ...f, key: keyOf(f.rel) }));
  for (const job of jobs) {
    const problem = keyProblem(job.key);
    if (problem) throw new InvalidOptionError(`${job.path}: ${problem}`);
  }
  o.onPlan?.(
    jobs.length,
    jobs.reduce((n, j) => n + j.size, 0),
  );
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
