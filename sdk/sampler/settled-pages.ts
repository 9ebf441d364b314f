/**
 * Where a rank is done with the clips of a plan read page by page, so their pages can go: each
 * position of the epoch order is noted (with its object) as it first leaves the order, and
 * released once a position at or past it settles. The rank's clips are delivered in position
 * order, so when position P settles every position before it was either delivered already or
 * never will be by this rank (another rank's, or consumed by the run resumed). What stays
 * noted is the deal's lookahead and the pipeline's clips in flight: bounded by the options,
 * whatever the dataset's size. A position the deal finds is not this rank's (another rank's,
 * or consumed before a resume) is released at once (`passed`), not when a later one settles:
 * with several ranks a rank's lookahead holds every rank's clips of a round.
 */
import type { ClipRef } from "./clip-plan.js";
import { PageWait } from "./paged-plan.js";

/** What releases a clip: its object's page loses one pin (LazyPlan). */
export interface ClipReleaser {
  release(id: number): void;
}

/** What a deal tells of the positions it walked past that this rank never delivers. */
export interface PassedPositions {
  passed(position: number): void;
}

/** A noted position already released (`passed`): an object id is never negative. */
const GONE = -1;

/**
 * @example
 * const settled = new SettledPages(plan);
 * const mine = new RankClips(settled.track(pagedStream(plan, "none", p)!), consumed, 0, 1);
 * // as each batch is delivered:
 * settled.settled(Math.max(...batch.settles));
 */
export class SettledPages implements PassedPositions {
  /** Objects of the positions noted and not settled, from position `base` (the first `head` of them settled; GONE: released before). */
  private ids: number[] = [];
  private head = 0;
  private base = 0;

  constructor(private readonly plan: ClipReleaser) {}

  /** Positions noted and not settled yet. */
  get pending(): number {
    return this.ids.length - this.head;
  }

  /** `order` as it is, each position noted the first time a walk of the order (a resume walks it twice) yields it. */
  *track(order: Iterable<ClipRef | PageWait>): Generator<ClipRef | PageWait> {
    let at = 0;
    for (const item of order) {
      if (!(item instanceof PageWait)) {
        if (at === this.base + this.ids.length - this.head) this.ids.push(item.object);
        at++;
      }
      yield item;
    }
  }

  /** Position `position` (noted) is not this rank's to deliver: its clip is released now. */
  passed(position: number): void {
    const at = this.head + position - this.base;
    if (position < this.base || at >= this.ids.length || this.ids[at] === GONE) return;
    this.plan.release(this.ids[at]!);
    this.ids[at] = GONE;
  }

  /** Every position up to `position` is done with: their clips are released. */
  settled(position: number): void {
    while (this.head < this.ids.length && this.base <= position) {
      const id = this.ids[this.head++]!;
      if (id !== GONE) this.plan.release(id);
      this.base++;
    }
    // Compacted now and then: the array holds what is pending, not the epoch.
    if (this.head > 1024 && this.head * 2 > this.ids.length) {
      this.ids = this.ids.slice(this.head);
      this.head = 0;
    }
  }
}
