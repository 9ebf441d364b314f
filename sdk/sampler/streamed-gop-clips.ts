import type { ClipRef, PlannedObject } from "./clip-plan.js";
import type { PagedPlan, PageWait } from "./paged-plan.js";
import { GROUPS_PER_TURN, TurnDeal } from "./partition.js";
import { type ConsumedPositions, type RankClip, StreamedDeal } from "./rank-clips.js";

/** GOP runs the turn size is measured over: the first ones the order meets. */
const TURN_SAMPLE_RUNS = 64;

/** The GOP run of a clip (object and the keyframe its GOP opens with), and the clips in it. */
function runOf(object: PlannedObject, start: number): { key: number; size: number } {
  const { starts, gops } = object;
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid]! < start) lo = mid + 1;
    else hi = mid;
  }
  if (!gops) return { key: start, size: 1 };
  const key = gops[lo]!;
  let a = lo;
  let b = lo;
  while (a > 0 && gops[a - 1] === key) a--;
  while (b + 1 < gops.length && gops[b + 1] === key) b++;
  return { key, size: b - a + 1 };
}

/**
 * One rank's clips when clips share GOPs, over an order whose total is unknown (pages read as
 * the order reaches them): GopRankClips' deal without the epoch's size. A GOP run's clips go to
 * one rank: runs are laid end to end in the order they are first met (each run's size is its
 * clips less those consumed) and dealt in turns of `turn` places, rank after rank; the turn is
 * GROUPS_PER_TURN times the mean size of the first TURN_SAMPLE_RUNS runs. A whole round (every
 * rank a turn) is plain arithmetic once the runs met reach its end, so a rank looks ahead at
 * most one round (plus a run) of the order; the last, partial round is dealt as TurnDeal deals
 * it once the order's end is met, so shares differ by at most one and every clip is dealt once.
 * A resume first walks the order up to its last consumed position (as GopRankClips does),
 * counting the consumed clips of each run.
 *
 * @example
 * const mine = new StreamedGopClips(() => pagedStream(plan, "shard-buffer", p)!, new PositionSet(Infinity), plan, 1, 4);
 */
export class StreamedGopClips extends StreamedDeal {
  /** The resume's walk over the order, while it has consumed positions left to meet. */
  private pre: Iterator<ClipRef | PageWait> | undefined;
  private preAt = 0;
  private preLeft: number;
  /** Consumed clips per run (`object:key`), from the resume's walk. */
  private readonly taken = new Map<string, number>();
  /** Where each run met starts in the runs-end-to-end sequence, and its clips placed so far. */
  private readonly runs = new Map<string, { start: number; seen: number; size: number }>();
  private nextStart = 0;
  /** Runs met so far. */
  private met = 0;
  /** Clips taken from the order but not dealt yet (the lookahead), with their places. */
  private readonly ahead: { position: number; ref: ClipRef; place: number }[] = [];
  private ended = false;
  private turn = 0;
  private last: TurnDeal | undefined;

  constructor(
    order: () => Iterable<ClipRef | PageWait>,
    consumed: ConsumedPositions,
    private readonly plan: PagedPlan,
    rank: number,
    world: number,
    limit?: number,
  ) {
    super(consumed, rank, world, limit);
    this.preLeft = consumed.count;
    if (this.preLeft > 0) this.pre = order()[Symbol.iterator]();
    this.streamFrom(order());
  }

  protected dealNext(): RankClip {
    this.takeConsumed();
    // The turn: from the first runs met (every rank meets the same ones).
    while (this.turn === 0) {
      if (this.ended || this.met >= TURN_SAMPLE_RUNS) {
        this.turn = Math.max(1, Math.round((GROUPS_PER_TURN * this.nextStart) / Math.max(1, this.met)));
      } else this.pull();
    }
    const round = this.turn * this.world;
    for (;;) {
      const next = this.ahead[0];
      if (!next) {
        if (this.ended) this.endOfOrder();
        this.pull();
        continue;
      }
      // Its round is whole once the runs met reach the round's end; else look ahead to know.
      const roundEnd = (Math.floor(next.place / round) + 1) * round;
      if (!this.ended && this.nextStart < roundEnd) {
        this.pull();
        continue;
      }
      this.ahead.shift();
      if (this.owns(next.place, round)) return { position: next.position, ref: next.ref };
    }
  }

  private owns(place: number, round: number): boolean {
    if (!this.ended || place < Math.floor(this.nextStart / round) * round)
      return Math.floor((place % round) / this.turn) === this.rank;
    this.last ??= new TurnDeal(this.nextStart, 0, this.rank, this.world, this.turn);
    return this.last.owns(place);
  }

  /** Takes the order's next clip into the lookahead, placing it in its run; notes the order's end. */
  private pull(): void {
    const position = this.orderAt;
    const ref = this.nextRefOrEnd();
    if (!ref) {
      this.ended = true;
      return;
    }
    if (this.isConsumed(position)) return;
    const { key, size } = runOf(this.plan.object(ref.object), ref.start);
    const id = `${ref.object}:${key}`;
    let run = this.runs.get(id);
    if (!run) {
      run = { start: this.nextStart, seen: 0, size: size - (this.taken.get(id) ?? 0) };
      this.runs.set(id, run);
      this.nextStart += run.size;
      this.met++;
    }
    this.ahead.push({ position, ref, place: run.start + run.seen++ });
    // A run all placed is forgotten: memory stays with the runs open in the order.
    if (run.seen === run.size) this.runs.delete(id);
  }

  /** The resume's walk: each consumed clip taken off its run, up to the last consumed position. */
  private takeConsumed(): void {
    while (this.pre && this.preLeft > 0) {
      const next = this.pre.next();
      if (next.done) throw this.shortOrderAt(this.preAt);
      if (!("object" in next.value)) this.waitFor(next.value);
      const position = this.preAt++;
      if (!this.isConsumed(position)) continue;
      const ref = next.value;
      const id = `${ref.object}:${runOf(this.plan.object(ref.object), ref.start).key}`;
      this.taken.set(id, (this.taken.get(id) ?? 0) + 1);
      this.preLeft--;
    }
    this.pre = undefined;
  }
}
