/**
 * Retry with exponential backoff and full jitter. Only transient failures are retried: resets,
 * timeouts, 5xx and short bodies. An attempt that moved bytes does not count against the budget,
 * so a flaky but working link still finishes a long range.
 */
import { hasTransientCode } from "../../common/transient-errors.js";
import { UpstreamUnavailableError } from "../errors.js";

export interface RetryPolicy {
  readonly retries: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

/** Thrown by an attempt for a failure worth another try (5xx, short body, broken Content-Range). */
export class TransientUpstreamError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransientUpstreamError";
  }
}

/** Whether a failure is worth another try: one an attempt marked so, or a transient code (common/transient-errors.ts). */
export function isTransient(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof TransientUpstreamError) return true;
  }
  return hasTransientCode(err);
}

export function backoffDelay(attempt: number, policy: RetryPolicy): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** attempt);
  return Math.random() * ceiling;
}

/**
 * Calls `attempt` until it resolves, a non-transient error escapes, or the retries are spent
 * (then ERR_UPSTREAM_UNAVAILABLE with the last failure as cause).
 *
 * @example
 * const body = await withRetry((n) => fetchOnce(n), { retries: 5, minDelayMs: 50, maxDelayMs: 2000 }, { url });
 */
export async function withRetry<T>(
  attempt: (n: number) => Promise<T>,
  policy: RetryPolicy,
  ctx: { url: string; progressed?: () => boolean; signal?: AbortSignal; onRetry?: (err: unknown, n: number) => void },
): Promise<T> {
  let failures = 0;
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!isTransient(err) || ctx.signal?.aborted) throw err;
      if (!ctx.progressed?.()) failures++;
      if (failures > policy.retries || n > policy.retries * 8)
        throw new UpstreamUnavailableError(ctx.url, n + 1, { cause: err });
      ctx.onRetry?.(err, n);
      await new Promise((r) => setTimeout(r, backoffDelay(failures, policy)));
    }
  }
}
