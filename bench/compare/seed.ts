/**
 * The bench's uploads to its local edge. A PUT of a file under its key is idempotent (the same
 * key, the same bytes), so one that meets a restart of the edge's workerd (wrangler's 503
 * "Your worker restarted mid-request", or a connection reset mid-body) is sent again, a bounded
 * number of times. Any other answer fails at once; an edge whose process is gone fails with
 * its last output rather than with the bare 503 or reset.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { encodeKeyPath } from "../../common/keys.js";
import { hasTransientCode } from "../../common/transient-errors.js";
import type { LocalEdge } from "../../sdk/dev/index.js";

/** What an upload needs of the edge: where it is, its token, and (for the error) whether it still runs. */
export type SeedEdge = Pick<LocalEdge, "url" | "token"> & Partial<Pick<LocalEdge, "exitStatus" | "output">>;

export interface PutFileOptions {
  /** Tries in all, the first included; default 4. */
  readonly attempts?: number;
  /** Wait before the second try, doubled for each one after; default 250 ms. */
  readonly backoffMs?: number;
}

const OUTPUT_TAIL = 2000;

function tail(edge: SeedEdge): string {
  const out = edge.output?.() ?? "";
  return out.length > OUTPUT_TAIL ? `…${out.slice(-OUTPUT_TAIL)}` : out;
}

/** A failure worth another try: a 503 or a dropped connection. */
class Retryable extends Error {}

async function putOnce(edge: SeedEdge, key: string, file: string, size: number): Promise<void> {
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(`${edge.url}/v1/objects/${encodeKeyPath(key)}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${edge.token}`, "content-length": String(size), "content-type": "video/mp4" },
      body: createReadStream(file),
    });
  } catch (err) {
    // A connection the edge dropped mid-request: the codes every retrying client of ec shares.
    if (!hasTransientCode(err)) throw err;
    throw new Retryable(`PUT ${key}: ${(err as Error).message}`, { cause: err });
  }
  const text = await res.body.text();
  if (res.statusCode < 300) return;
  const message = `Expected 2xx for PUT ${key} but received ${res.statusCode}: ${text}`;
  throw res.statusCode === 503 ? new Retryable(message) : new Error(message);
}

/**
 * PUTs `file` to the edge under `key`, again after a 503 or a reset, at most `attempts` times.
 *
 * @example
 * await putFile(edge, "bench/video-000.mp4", "/tmp/ec-bench-x/videos/video-000.mp4");
 */
export async function putFile(edge: SeedEdge, key: string, file: string, opts: PutFileOptions = {}): Promise<void> {
  const attempts = opts.attempts ?? 4;
  const backoffMs = opts.backoffMs ?? 250;
  const { size } = await stat(file);
  for (let attempt = 1; ; attempt++) {
    try {
      return await putOnce(edge, key, file, size);
    } catch (err) {
      if (!(err instanceof Retryable)) throw err;
      // A dying process resets its connections before it exits: give it the back-off to show.
      await sleep(backoffMs * 2 ** (attempt - 1));
      const status = edge.exitStatus?.();
      if (status !== undefined)
        throw new Error(
          `The local edge exited (${status}) during PUT ${key} (${err.message}); its last output:\n${tail(edge)}`,
          {
            cause: err,
          },
        );
      if (attempt >= attempts) {
        const out = tail(edge);
        throw new Error(`${err.message} (after ${attempts} tries)${out ? `; the edge's last output:\n${out}` : ""}`, {
          cause: err,
        });
      }
    }
  }
}
