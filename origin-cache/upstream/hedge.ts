/**
 * Hedged requests for slow tails: when the headers of an answer take longer than `afterMs`, an
 * identical second request goes out; whichever answers first is used and the other is cancelled
 * (its body destroyed), so no body is left unconsumed. The hedge rides on the in-flight slot of
 * the request it hedges. Without a hedge or an outer signal nothing can cancel a request, and it
 * goes out with no signal: undici then registers no abort listener on it or on its body.
 */
import type { Dispatcher } from "undici";

type Send<R> = (signal: AbortSignal | undefined) => Promise<R>;

/** Ends an answer nobody reads: `request`'s by destroying its body. */
function dropBody(res: Dispatcher.ResponseData): void {
  // undici emits an abort error when an unread body is destroyed; unheard, it would crash the process.
  res.body.on("error", () => {}).destroy();
}

/**
 * @example
 * const res = await hedged((signal) => pool.request({ ...opts, signal }), 200, () => hedges++);
 */
export async function hedged<R = Dispatcher.ResponseData>(
  send: Send<R>,
  afterMs: number | undefined,
  onHedge?: () => void,
  outer?: AbortSignal,
  abandon: (res: R) => void = dropBody as (res: R) => void,
): Promise<R> {
  if (!afterMs && !outer) return send(undefined);
  const a = new AbortController();
  const b = new AbortController();
  const forward = (): void => {
    a.abort(outer?.reason);
    b.abort(outer?.reason);
  };
  outer?.addEventListener("abort", forward, { once: true });
  try {
    const first = send(a.signal);
    if (!afterMs) return await first;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<"slow">((resolve) => (timer = setTimeout(() => resolve("slow"), afterMs)));
    const early = await Promise.race([first, slow]).finally(() => clearTimeout(timer));
    if (early !== "slow") return early;
    onHedge?.();
    const second = send(b.signal);
    try {
      const won = await Promise.any([
        first.then((res) => ({ res, lost: second, abort: b })),
        second.then((res) => ({ res, lost: first, abort: a })),
      ]);
      won.abort.abort();
      won.lost.then(abandon, () => {});
      return won.res;
    } catch (err) {
      throw err instanceof AggregateError ? err.errors[0] : err;
    }
  } finally {
    outer?.removeEventListener("abort", forward);
  }
}
