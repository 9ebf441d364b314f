/**
 * The one retry policy of every client in ec that retries (the origin-cache's upstream pulls,
 * the SDK's reads through a cache and from a bucket, uploads through the edge): which failures
 * are worth another try (common/transient-errors.ts, or an error an attempt marks so), how long
 * to wait before it (exponential backoff with full jitter, capped), and when to stop (a budget
 * of failed attempts, or a window of time shared by every caller of one service).
 *
 * undici's RetryHandler retries one dispatch; these sites retry more than one: a range resumed
 * from its first missing byte under a fresh in-flight slot and a hedge, a read that may go to a
 * file instead of HTTP, an upload whose body stream is made again. So the policy is a loop.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { hasTransientCode } from "./transient-errors.js";

/** How long to wait before another try: `minDelayMs · 2^failures`, at most `maxDelayMs`, times a random factor. */
export interface Backoff {
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

/** A budget of failed attempts on top of the backoff. */
export interface RetryPolicy extends Backoff {
  /** Failed attempts that are retried; the one after them gives up. */
  readonly retries: number;
}

/** Thrown by an attempt for a failure worth another try that carries no transient code: a 5xx, a short body, a broken Content-Range. */
export class TransientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransientError";
  }
}

/** How far down a `cause` chain a TransientError is looked for, as hasTransientCode looks for codes. */
const CAUSE_DEPTH = 4;

/**
 * Whether a failure is worth another try: one an attempt marked so (a TransientError on it or
 * down its cause chain), or one with a transient code; `extra` adds codes a caller also treats
 * as transient.
 *
 * @example
 * isTransient(new TransientError("short body")); // true
 * isTransient(Object.assign(new Error("gone"), { code: "ERR_ETAG_CHANGED" })); // false
 */
export function isTransient(err: unknown, extra?: ReadonlySet<string>): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < CAUSE_DEPTH; e = e.cause, depth++) {
    if (e instanceof TransientError) return true;
  }
  return hasTransientCode(err, extra);
}

/**
 * The wait before the next try after `failures` failed attempts: full jitter, so clients that
 * failed together do not come back together.
 *
 * @example
 * backoffDelay(3, { minDelayMs: 50, maxDelayMs: 1000 }); // uniform in [0, 400) ms
 */
export function backoffDelay(failures: number, backoff: Backoff): number {
  return Math.random() * Math.min(backoff.maxDelayMs, backoff.minDelayMs * 2 ** failures);
}

export interface RetryHooks {
  /** Which failures are worth another try; default isTransient. */
  readonly transient?: (err: unknown) => boolean;
  /** Whether the attempt that just failed moved bytes: such an attempt does not count against the budget. */
  readonly progressed?: () => boolean;
  /** Stops the retries: a failure once it is aborted escapes as it is, and an abort ends the wait. */
  readonly signal?: AbortSignal;
  /** Hears each failure that is retried, and the attempt's number (from 0). */
  readonly onRetry?: (err: unknown, attempt: number) => void;
  /** What escapes once the budget is spent, given the last failure and the attempts made; default the failure itself. */
  readonly giveUp?: (err: unknown, attempts: number) => unknown;
}

/** However many attempts move bytes, at most this many times the budget are made in all. */
const PROGRESS_FACTOR = 8;

/**
 * Calls `attempt` until it resolves, a failure that is not transient escapes, or the failed
 * attempts exceed `policy.retries` (then `hooks.giveUp`'s error). An attempt that moved bytes
 * (`hooks.progressed`) is not a failed one, so a flaky but working link still finishes a long range.
 *
 * @example
 * const body = await retry((n) => fetchOnce(n), { retries: 5, minDelayMs: 50, maxDelayMs: 2000 });
 */
export async function retry<T>(
  attempt: (n: number) => Promise<T>,
  policy: RetryPolicy,
  hooks: RetryHooks = {},
): Promise<T> {
  const transient = hooks.transient ?? isTransient;
  let failures = 0;
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!transient(err) || hooks.signal?.aborted) throw err;
      if (!hooks.progressed?.()) failures++;
      if (failures > policy.retries || n > policy.retries * PROGRESS_FACTOR)
        throw hooks.giveUp ? hooks.giveUp(err, n + 1) : err;
      hooks.onRetry?.(err, n);
      await sleep(backoffDelay(failures, policy), undefined, hooks.signal ? { signal: hooks.signal } : {});
    }
  }
}

/**
 * A window of time shared by every call through it, for a service that goes away for seconds
 * (a cache restarting, an edge redeployed): calls retry transient failures with backoff while
 * the outage is younger than `windowMs`; once it is older they fail at once instead of each
 * waiting a window of its own. Any success ends the outage.
 *
 * @example
 * const outage = new RetryWindow(20_000);
 * const bytes = await outage.run(() => readOnce());
 */
export class RetryWindow {
  #since: number | undefined;
  readonly #windowMs: number;
  readonly #backoff: Backoff;
  readonly #transient: (err: unknown) => boolean;

  constructor(
    windowMs: number,
    opts: { readonly backoff?: Backoff; readonly transient?: (err: unknown) => boolean } = {},
  ) {
    this.#windowMs = windowMs;
    this.#backoff = opts.backoff ?? { minDelayMs: 50, maxDelayMs: 1000 };
    this.#transient = opts.transient ?? isTransient;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    for (let failures = 1; ; failures++) {
      try {
        const value = await fn();
        this.#since = undefined;
        return value;
      } catch (err) {
        if (!this.#transient(err)) throw err;
        this.#since ??= Date.now();
        const left = this.#since + this.#windowMs - Date.now();
        if (left <= 0) throw err;
        // The last wait ends with the window, so a call that saw the outage begin tries once more at its end.
        await new Promise((r) => setTimeout(r, Math.min(left, backoffDelay(failures, this.#backoff))));
      }
    }
  }
}
