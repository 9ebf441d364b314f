/**
 * Reused batch memory for the TypeScript consumer: the buffers clips are decoded into (slot
 * groups, clip-slots.ts) and the ones `batch.frames` is stacked into where a batch is no view.
 * A buffer is lent to one batch and comes back only when the consumer says it let the batch go
 * (`batch.release()`); a batch that is kept, or dropped without release, keeps its buffer and is
 * collected like any other object, so no kept batch is ever overwritten. At most `maxFree`
 * released buffers wait for reuse; more are dropped, and a closed stream's go to the process's
 * next one. Not thread-safe; one stream owns it.
 */

/** A free buffer serves a batch of at least this share of its size, so a small last batch does not pin a large one. */
const MIN_FILL = 0.5;

/**
 * Buffers of closed streams, for the next stream of this process (the next epoch's `open()`):
 * fresh memory costs a page fault per 4 KiB on first touch, more than decoding into it. Bounded.
 */
const SPARE_MAX_BYTES = 512 * 2 ** 20;
const spare: ArrayBuffer[] = [];
let spareBytes = 0;

/** Index of the smallest buffer of `list` that fits `bytes` without being twice too big, or -1. */
function bestFit(list: readonly ArrayBuffer[], bytes: number): number {
  let best = -1;
  for (let i = 0; i < list.length; i++) {
    const b = list[i]!;
    if (
      b.byteLength >= bytes &&
      b.byteLength * MIN_FILL <= bytes &&
      (best < 0 || b.byteLength < list[best]!.byteLength)
    )
      best = i;
  }
  return best;
}

export class BatchPool {
  private readonly free: ArrayBuffer[] = [];
  /** Buffers handed out since the pool opened, reused or new: for tests and stats. */
  taken = 0;
  reused = 0;

  constructor(private readonly maxFree: number) {}

  /**
   * Speaks for memory a later `take(bytes, true)` will want, before it is touched (a clip waiting
   * for a decoder); false where nothing can be promised. Here: nothing to promise (heap memory).
   */
  reserve(): boolean {
    return false;
  }

  /** A reservation that ends without a take (its clip was skipped or wrote elsewhere). */
  unreserve(): void {}

  /**
   * A buffer of at least `bytes`: the smallest free one that fits, else a new one. Its contents
   * are whatever the last batch left; the caller overwrites all `bytes` of it.
   *
   * @example
   * const buffer = pool.take(layout.byteLength);
   */
  take(bytes: number, _reserved = false): ArrayBuffer {
    this.taken++;
    const best = bestFit(this.free, bytes);
    if (best >= 0) {
      this.reused++;
      return this.free.splice(best, 1)[0]!;
    }
    const kept = bestFit(spare, bytes);
    if (kept >= 0) {
      this.reused++;
      const [b] = spare.splice(kept, 1);
      spareBytes -= b!.byteLength;
      return b!;
    }
    // No zero fill: every byte is written before the batch is handed out.
    const fresh = Buffer.allocUnsafeSlow(bytes);
    return fresh.buffer as ArrayBuffer;
  }

  /** The consumer let go of the batch over `buffer`: the next batch may write into it. */
  give(buffer: ArrayBuffer): void {
    if (this.closed) keep(buffer);
    else if (this.free.length < this.maxFree && !this.free.includes(buffer)) this.free.push(buffer);
  }

  /** The stream ended: its free buffers (and those released later) serve the process's next stream. */
  close(): void {
    this.closed = true;
    for (const b of this.free.splice(0)) keep(b);
  }

  private closed = false;
}

function keep(buffer: ArrayBuffer): void {
  if (spareBytes + buffer.byteLength > SPARE_MAX_BYTES || spare.includes(buffer)) return;
  spare.push(buffer);
  spareBytes += buffer.byteLength;
}
