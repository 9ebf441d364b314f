import { InvalidOptionError } from "../errors.js";
import type { ClipRef } from "./clip-plan.js";

/** A read-only list that may compute its items when asked: an array is one. */
export interface ClipSequence<T> {
  readonly length: number;
  at(i: number): T | undefined;
}

/** A clip of this rank: its position in the epoch order and which clip it is. */
export interface RankClip {
  readonly position: number;
  readonly ref: ClipRef;
}

/** The positions of an epoch already consumed (a checkpoint's bitmap), as RankClips reads them. */
export interface ConsumedPositions {
  readonly total: number;
  readonly count: number;
  readonly bits: Uint8Array;
}

/** Only a registered algorithm can come up short: the built-in ones order every clip. */
export function shortOrder(total: number, ordered: number): InvalidOptionError {
  return new InvalidOptionError(
    `Expected the shuffle to order all ${total} clips of the epoch but received ${ordered}`,
  );
}

/**
 * One rank's clips in delivery order, exactly `partition(consumed.remaining(), rank, world)`
 * mapped through the epoch order, but computed as they are asked for: `at(i)` advances the
 * (streamed) epoch order only up to the i-th clip's position, so open() and the first batch
 * cost what the first clips need, not the whole epoch. Asked for in about increasing order
 * (the pipeline's); what was computed is kept, as the materialised list was.
 *
 * @example
 * const mine = new RankClips(epochStream(plan, "shard-buffer", p), consumed, 0, 8);
 * mine.at(0); // { position: 0, ref: { object, start } }
 */
export class RankClips implements ClipSequence<RankClip> {
  readonly length: number;
  private readonly done: RankClip[] = [];
  private readonly order: Iterator<ClipRef>;
  /** A copy: the run adds what it consumes to the live set, which must not move positions still to deal. */
  private readonly bits: Uint8Array | undefined;
  private readonly total: number;
  /** Positions taken from `order`, and the scan over unconsumed positions. */
  private orderAt = 0;
  private scanAt = 0;
  private unconsumedSeen = 0;

  constructor(
    order: Iterable<ClipRef>,
    consumed: ConsumedPositions,
    private readonly rank: number,
    private readonly world: number,
    limit?: number,
  ) {
    this.order = order[Symbol.iterator]();
    this.total = consumed.total;
    this.bits = consumed.count > 0 ? consumed.bits.slice() : undefined;
    const dealt = Math.max(0, Math.ceil((consumed.total - consumed.count - rank) / world));
    this.length = limit === undefined ? dealt : Math.min(dealt, limit);
  }

  at(i: number): RankClip | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) return undefined;
    while (this.done.length <= i) {
      const position = this.unconsumed(this.rank + this.done.length * this.world);
      this.done.push({ position, ref: this.refAt(position) });
    }
    return this.done[i];
  }

  /** The k-th unconsumed position; k only grows from call to call. */
  private unconsumed(k: number): number {
    if (!this.bits) return k;
    for (;;) {
      const p = this.scanAt++;
      if ((this.bits[p >> 3]! & (1 << (p & 7))) !== 0) continue;
      if (this.unconsumedSeen++ === k) return p;
    }
  }

  /** The epoch order's clip at `position`; positions only grow from call to call. */
  private refAt(position: number): ClipRef {
    let ref: ClipRef | undefined;
    while (this.orderAt <= position) {
      const next = this.order.next();
      if (next.done) throw shortOrder(this.total, this.orderAt);
      ref = next.value;
      this.orderAt++;
    }
    return ref!;
  }
}
