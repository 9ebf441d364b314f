/**
 * Where a rank is done with the clips of a plan read page by page, so their pages can go: each
 * position of the epoch order is noted (with its object) as it first leaves the order, and
 * released once a position at or past it settles. The rank's clips are delivered in position
 * order, so when position P settles every position before it was either delivered already or
 * never will be by this rank (another rank's, or consumed by the run resumed). What stays
 * noted is the deal's lookahead and the pipeline's clips in flight: bounded by the options,
 * whatever the dataset's size.
 */
import type { ClipRef } from "./clip-plan.js";
import { PageWait } from "./paged-plan.js";

/** What releases a clip: its object's page loses one pin (LazyPlan). */
export interface ClipReleaser {
  release(id: number): void;
}

/**
 * @example
 * const settled = new SettledPages(plan);
 * const mine = new RankClips(settled.track(pagedStream(plan, "none", p)!), consumed, 0, 1);
 * // as each batch is delivered:
 * settled.settled(Math.max(...batch.settles));
 */
export class SettledPages {
  /** Objects of the positions noted and not released, from position `base` (the first `head` of them released). */
  private ids: number[] = [];
  private head = 0;
  private base = 0;

  constructor(private readonly plan: ClipReleaser) {}

  /** Positions noted and not released yet. */
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

  /** Every position up to `position` is done with: their clips are released. */
  settled(position: number): void {
    while (this.head < this.ids.length && this.base <= position) {
      this.plan.release(this.ids[this.head++]!);
      this.base++;
    }
    // Compacted now and then: the array holds what is pending, not the epoch.
    if (this.head > 1024 && this.head * 2 > this.ids.length) {
      this.ids = this.ids.slice(this.head);
      this.head = 0;
    }
  }
}
