/**
 * The origin-cache's use of the common retry policy (common/retry-policy.ts): upstream pulls
 * retry transient failures with full-jitter backoff, an attempt that moved bytes does not count
 * against the budget, and an upstream that stays down is ERR_UPSTREAM_UNAVAILABLE.
 */
import { isTransient, retry, TransientError, type RetryPolicy } from "../../common/retry-policy.js";
import { UpstreamUnavailableError } from "../errors.js";

export { isTransient, type RetryPolicy };

/** Thrown by an attempt for a failure worth another try (5xx, short body, broken Content-Range). */
export class TransientUpstreamError extends TransientError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransientUpstreamError";
  }
}

/**
 * Calls `attempt` until it resolves, a non-transient error escapes, or the retries are spent
 * (then ERR_UPSTREAM_UNAVAILABLE with the last failure as cause).
 *
 * @example
 * const body = await withRetry((n) => fetchOnce(n), { retries: 5, minDelayMs: 50, maxDelayMs: 2000 }, { url });
 */
export function withRetry<T>(
  attempt: (n: number) => Promise<T>,
  policy: RetryPolicy,
  ctx: { url: string; progressed?: () => boolean; signal?: AbortSignal; onRetry?: (err: unknown, n: number) => void },
): Promise<T> {
  return retry(attempt, policy, {
    ...ctx,
    giveUp: (err, attempts) => new UpstreamUnavailableError(ctx.url, attempts, { cause: err }),
  });
}
