/**
 * A counting semaphore with a direct hand-off: a released slot passes straight to the longest
 * waiter, so a caller that arrives between a release and the waiter's wake-up queues behind it
 * instead of taking the slot too. The origin-cache caps its upstream requests with it, the SDK
 * its decodes. Not for use across threads.
 */

import { describeReceived, EcError } from "./errors.js";

export class Limiter {
  readonly #max: number;
  /** Waiters by `turn` (lowest first), in arrival order among equal turns. */
  readonly #waiting: { turn: number; wake: () => void }[] = [];
  #active = 0;
  #peak = 0;

  /**
   * @example
   * const limiter = new Limiter(4);
   * const release = await limiter.acquire();
   * try { await work(); } finally { release(); }
   */
  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new EcError(
        "ERR_INVALID_ARGUMENT",
        `Expected a positive integer for the limit but received ${describeReceived(max)}`,
      );
    this.#max = max;
  }

  /**
   * Waits for a slot; the returned function gives it back (a second call does nothing). A freed
   * slot goes to the waiter of the lowest `turn` (default: after every numbered one), in arrival
   * order among equals: the SDK numbers decodes by their clips' delivery order, so a clip
   * scheduled later never decodes (into memory it then holds) while an earlier one waits.
   */
  async acquire(turn = Number.POSITIVE_INFINITY): Promise<() => void> {
    if (this.#active >= this.#max)
      await new Promise<void>((wake) => {
        let at = this.#waiting.length;
        while (at > 0 && this.#waiting[at - 1]!.turn > turn) at--;
        this.#waiting.splice(at, 0, { turn, wake });
      });
    else this.#active++;
    this.#peak = Math.max(this.#peak, this.#active);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter, so `active` stays put.
      if (next) next.wake();
      else this.#active--;
    };
  }

  /**
   * Runs `fn` in a slot and gives the slot back however it ends.
   *
   * @example
   * const frames = await limiter.run(() => decode(packet));
   */
  async run<R>(fn: () => Promise<R>, turn?: number): Promise<R> {
    const release = await this.acquire(turn);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Slots in use now, those handed to a woken waiter included. */
  get active(): number {
    return this.#active;
  }
  /** The most slots ever in use at once. */
  get peak(): number {
    return this.#peak;
  }
}

/**
 * Runs `fn` over `items` with at most `limit` calls in flight, each result at its item's index.
 * The first rejection rejects the whole; calls already started run on.
 *
 * @example
 * const sizes = await mapLimit(keys, 8, (key) => head(key));
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
