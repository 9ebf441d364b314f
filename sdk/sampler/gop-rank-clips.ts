import type { ClipRef } from "./clip-plan.js";
import { TurnDeal, type PlanRuns } from "./partition.js";
import { shortOrder, StreamedDeal, type ConsumedPositions, type RankClip } from "./rank-clips.js";

/**
 * One rank's clips when clips share GOPs, exactly `partition(consumed.remaining(), rank, world,
 * gopGroups(plan, …))` mapped through the epoch order, but computed as they are asked for:
 * each GOP run's size is the plan's (less what a resume consumed), and a run's place in the
 * runs-end-to-end sequence is fixed when the walk first meets it, so `at(i)` advances the
 * streamed order only up to the i-th clip's position. A resume walks the order once more, up
 * to its last consumed position, to take the consumed clips off their runs.
 *
 * @example
 * const mine = new GopRankClips(() => epochStream(plan, "shard-buffer", p), consumed, planRuns(plan)!, 1, 4);
 */
export class GopRankClips extends StreamedDeal {
  /** Unconsumed clips of each run, and where each run starts in the sequence (-1: not met yet). */
  private readonly sizes: Int32Array;
  private readonly startOf: Float64Array;
  private readonly seen: Int32Array;
  private nextStart = 0;
  /** Undefined when every run left has one clip: then the clips are dealt round-robin, as `partition` does. */
  private readonly deal: TurnDeal | undefined;
  private remainingAt = 0;

  constructor(
    order: () => Iterable<ClipRef>,
    consumed: ConsumedPositions,
    private readonly runs: PlanRuns,
    rank: number,
    world: number,
    limit?: number,
  ) {
    super(consumed, rank, world, limit);
    this.sizes = runs.sizes.slice();
    if (this.anyConsumed) this.takeConsumed(order(), consumed.count);
    const n = consumed.total - consumed.count;
    let left = 0;
    for (const s of this.sizes) if (s > 0) left++;
    this.deal = left === n ? undefined : new TurnDeal(n, left, rank, world);
    this.startOf = new Float64Array(runs.count).fill(-1);
    this.seen = new Int32Array(runs.count);
    this.streamFrom(order());
  }

  protected dealNext(): RankClip {
    for (;;) {
      const position = this.orderAt;
      const ref = this.nextRef();
      if (this.isConsumed(position)) continue;
      const k = this.remainingAt++;
      if (this.deal ? this.deal.owns(this.placeOf(ref)) : k % this.world === this.rank) return { position, ref };
    }
  }

  /** The clip's place in the runs-end-to-end sequence; clips come in epoch order. */
  private placeOf(ref: ClipRef): number {
    const run = this.runs.of(ref);
    if (this.startOf[run]! < 0) {
      this.startOf[run] = this.nextStart;
      this.nextStart += this.sizes[run]!;
    }
    return this.startOf[run]! + this.seen[run]!++;
  }

  /** Takes the consumed clips off their runs' sizes: the order up to the last consumed position. */
  private takeConsumed(order: Iterable<ClipRef>, count: number): void {
    let left = count;
    let position = 0;
    for (const ref of order) {
      if (left === 0) return;
      if (this.isConsumed(position++)) {
        this.sizes[this.runs.of(ref)]!--;
        left--;
      }
    }
    if (left > 0) throw shortOrder(this.total, position);
  }
}
