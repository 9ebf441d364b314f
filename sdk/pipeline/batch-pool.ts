/**
 * Reused batch memory for the TypeScript consumer: the buffers `batch.frames` is stacked into.
 * A buffer is lent to one batch and comes back only when the consumer says it let the batch go
 * (`batch.release()`); a batch that is kept, or dropped without release, keeps its buffer and is
 * collected like any other object, so no kept batch is ever overwritten. At most `maxFree`
 * released buffers wait for reuse; more are dropped. Not thread-safe; one stream owns it.
 */

/** A free buffer serves a batch of at least this share of its size, so a small last batch does not pin a large one. */
const MIN_FILL = 0.5;

export class BatchPool {
  private readonly free: ArrayBuffer[] = [];
  /** Buffers handed out since the pool opened, reused or new: for tests and stats. */
  taken = 0;
  reused = 0;

  constructor(private readonly maxFree: number) {}

  /**
   * A buffer of at least `bytes`: the smallest free one that fits, else a new one. Its contents
   * are whatever the last batch left; the caller overwrites all `bytes` of it.
   *
   * @example
   * const buffer = pool.take(layout.byteLength);
   */
  take(bytes: number): ArrayBuffer {
    this.taken++;
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!;
      if (
        b.byteLength >= bytes &&
        b.byteLength * MIN_FILL <= bytes &&
        (best < 0 || b.byteLength < this.free[best]!.byteLength)
      )
        best = i;
    }
    if (best >= 0) {
      this.reused++;
      return this.free.splice(best, 1)[0]!;
    }
    // No zero fill: every byte is written before the batch is handed out.
    const fresh = Buffer.allocUnsafeSlow(bytes);
    return fresh.buffer as ArrayBuffer;
  }

  /** The consumer let go of the batch over `buffer`: the next batch may write into it. */
  give(buffer: ArrayBuffer): void {
    if (this.free.length < this.maxFree && !this.free.includes(buffer)) this.free.push(buffer);
  }
}
