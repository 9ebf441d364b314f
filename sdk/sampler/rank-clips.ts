import { InvalidOptionError } from "../errors.js";
import type { ClipRef } from "./clip-plan.js";
import { PageWait } from "./paged-plan.js";
import type { PassedPositions } from "./settled-pages.js";

/** A read-only list that may compute its items when asked: an array is one. */
export interface ClipSequence<T> {
  readonly length: number;
  at(i: number): T | undefined;
  /**
   * Settles once `at(i)` can answer without I/O (the table pages its order needs are read);
   * absent: it always can. The pipeline awaits it before it plans or reads item `i`.
   */
  ready?(i: number): Promise<void>;
  /**
   * Items at or before epoch position `position` are delivered: they need not be kept (a later
   * `at` of one of them throws). Absent: everything is kept.
   */
  forget?(position: number): void;
}

/**
 * Item `i` of a sequence once it is ready.
 *
 * @example
 * const clip = await readyAt(mine, 0);
 */
export async function readyAt<T>(items: ClipSequence<T>, i: number): Promise<T | undefined> {
  await items.ready?.(i);
  return items.at(i);
}

/** A clip of this rank: its position in the epoch order and which clip it is. */
export interface RankClip {
  readonly position: number;
  readonly ref: ClipRef;
}

/** The positions of an epoch already consumed (a checkpoint's bitmap), as RankClips reads them. */
export interface ConsumedPositions {
  /** Clips in the epoch order; Infinity where the order streams from pages read lazily (its end is found by walking it). */
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

/** A rank's share of `n` clips dealt one by one over `world` ranks: the first `n % world` ranks get one more. */
function rankShare(n: number, rank: number, world: number): number {
  return Math.floor(n / world) + (rank < n % world ? 1 : 0);
}

/** Thrown through a deal where the order reached pages not read yet (never out of `at` or `ready`). */
class Waiting {
  constructor(readonly wait: PageWait) {}
}

/** Thrown through a deal where an order of unknown length ended (never out of `at` or `ready`). */
class Ended {}

/**
 * What a rank's streamed deal keeps whatever the dealing rule: the consumed set as it was at
 * open, the rank's share (at most `limit`), the epoch order taken clip by clip, and the clips
 * dealt so far, so `at(i)` computes only up to the i-th clip and each clip once.
 */
export abstract class StreamedDeal implements ClipSequence<RankClip> {
  private known: number;
  /** The clips dealt from item `doneFrom` on (those before it delivered and forgotten). */
  private done: RankClip[] = [];
  private doneFrom = 0;
  /** A copy: the run adds what it consumes to the live set, which must not move positions still to deal. */
  private readonly bits: Uint8Array | undefined;
  protected readonly total: number;
  private order: Iterator<ClipRef | PageWait> | undefined;
  /** Positions taken from the epoch order. */
  protected orderAt = 0;

  constructor(
    consumed: ConsumedPositions,
    protected readonly rank: number,
    protected readonly world: number,
    limit: number | undefined,
    /** Told each position walked that this rank never delivers (its page need not wait for a later one to settle). */
    private readonly passedBy?: PassedPositions,
  ) {
    this.total = consumed.total;
    this.bits = consumed.count > 0 ? consumed.bits.slice() : undefined;
    const share = Number.isFinite(consumed.total) ? rankShare(consumed.total - consumed.count, rank, world) : Infinity;
    this.known = limit === undefined ? share : Math.min(share, limit);
  }

  /** The rank's clips; Infinity over an order of unknown length until its end is reached. */
  get length(): number {
    return this.known;
  }

  at(i: number): RankClip | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) return undefined;
    const wait = this.dealTo(i);
    if (wait) throw new Error(`Clip ${i} of this rank was asked for before ready(${i}) settled`);
    if (i < this.doneFrom) throw new RangeError(`Clip ${i} of this rank was asked for after it was delivered`);
    return i < this.known ? this.done[i - this.doneFrom] : undefined;
  }

  forget(position: number): void {
    let n = 0;
    while (n < this.done.length && this.done[n]!.position <= position) n++;
    if (n === 0) return;
    this.done = this.done.slice(n);
    this.doneFrom += n;
  }

  /** Reads the pages the order needs up to item `i`, one wait at a time. */
  async ready(i: number): Promise<void> {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) return;
    for (let wait = this.dealTo(i); wait && i < this.known; wait = this.dealTo(i)) await wait.until;
  }

  /** Deals up to item `i`; the order's wait where it reached pages not read yet. */
  private dealTo(i: number): PageWait | undefined {
    try {
      while (this.dealt <= i) this.done.push(this.dealNext());
      return undefined;
    } catch (err) {
      if (err instanceof Waiting) return err.wait;
      // An order of unknown length ended: the rank's share is what was dealt.
      if (err instanceof Ended) return void (this.known = this.dealt);
      throw err;
    }
  }

  /** How many clips were dealt so far. */
  protected get dealt(): number {
    return this.doneFrom + this.done.length;
  }

  /**
   * The rank's next clip; only called while the rank has clips left. Where `nextRef` throws
   * (the order waits for pages) it is called again once they are read: what it changed before
   * its first `nextRef` must hold on the second call too.
   */
  protected abstract dealNext(): RankClip;

  /** The epoch order the clips are dealt from; set once, before the first `at`. */
  protected streamFrom(order: Iterable<ClipRef | PageWait>): void {
    this.order = order[Symbol.iterator]();
  }

  /** The epoch order's clip at position `orderAt`, which then moves on one; throws Waiting where the order waits for pages. */
  protected nextRef(): ClipRef {
    const next = this.order!.next();
    if (next.done) throw Number.isFinite(this.total) ? shortOrder(this.total, this.orderAt) : new Ended();
    if (next.value instanceof PageWait) throw new Waiting(next.value);
    this.orderAt++;
    return next.value;
  }

  /** As `nextRef`, but undefined at the end of an order of unknown length. */
  protected nextRefOrEnd(): ClipRef | undefined {
    try {
      return this.nextRef();
    } catch (err) {
      if (err instanceof Ended) return undefined;
      throw err;
    }
  }

  /** Ends this rank's share: the order of unknown length has no clip left for it. */
  protected endOfOrder(): never {
    throw new Ended();
  }

  /** Waits for pages outside `nextRef` (a second walk over the order): the deal is asked again once they are read. */
  protected waitFor(wait: PageWait): never {
    throw new Waiting(wait);
  }

  /** The order came up short of the consumed positions. */
  protected shortOrderAt(position: number): InvalidOptionError {
    return shortOrder(this.total, position);
  }

  /** Position `position`, walked, is not this rank's to deliver. */
  protected passed(position: number): void {
    this.passedBy?.passed(position);
  }

  protected get anyConsumed(): boolean {
    return this.bits !== undefined;
  }

  protected isConsumed(p: number): boolean {
    return this.bits !== undefined && ((this.bits[p >> 3] ?? 0) & (1 << (p & 7))) !== 0;
  }
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
export class RankClips extends StreamedDeal {
  /** The scan over unconsumed positions. */
  private scanAt = 0;
  private unconsumedSeen = 0;

  /** The position of the clip being dealt, kept while the order waits for its pages. */
  private dealing: number | undefined;

  constructor(
    order: Iterable<ClipRef | PageWait>,
    consumed: ConsumedPositions,
    rank: number,
    world: number,
    limit?: number,
    passed?: PassedPositions,
  ) {
    super(consumed, rank, world, limit, passed);
    this.streamFrom(order);
  }

  protected dealNext(): RankClip {
    this.dealing ??= this.unconsumed(this.rank + this.dealt * this.world);
    const position = this.dealing;
    const ref = this.refAt(position);
    this.dealing = undefined;
    return { position, ref };
  }

  /** The k-th unconsumed position; k only grows from call to call. */
  private unconsumed(k: number): number {
    if (!this.anyConsumed) return k;
    for (;;) {
      const p = this.scanAt++;
      if (this.isConsumed(p)) continue;
      if (this.unconsumedSeen++ === k) return p;
    }
  }

  /** The epoch order's clip at `position`; positions only grow from call to call (a wait repeats the call). */
  private refAt(position: number): ClipRef {
    let ref: ClipRef | undefined;
    while (this.orderAt <= position) {
      ref = this.nextRef();
      // Walked past: another rank's or consumed.
      if (this.orderAt <= position) this.passed(this.orderAt - 1);
    }
    return ref!;
  }
}
