import type { ClipRef, PlannedObject } from "./clip-plan.js";
import type { PagedPlan, PageWait } from "./paged-plan.js";
import { GROUPS_PER_TURN, TurnDeal } from "./partition.js";
import { type ConsumedPositions, type RankClip, StreamedDeal } from "./rank-clips.js";
import type { PassedPositions } from "./settled-pages.js";

/** GOP runs the turn size is measured over: the first ones the order meets. */
export const TURN_SAMPLE_RUNS = 64;

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
 * GROUPS_PER_TURN times the mean size of the first TURN_SAMPLE_RUNS runs. The first round (every
 * rank a turn) is dealt as its places come, whether or not the order ends in it (epoch order 7),
 * so a rank's first clip costs the walk to its own turn, not to the round's end. A later round is
 * plain arithmetic once the runs met reach its end, so a rank looks ahead at most one round (plus
 * a run) of the order there; the last, partial round is dealt as TurnDeal deals it once the
 * order's end is met, so shares differ by at most one and every clip is dealt once (by at most
 * one turn where the order ends within the first round).
 * A resume also walks the order a second time (as GopRankClips does), counting the consumed
 * clips of each run: only as far as the runs the deal meets need (each run whole in that walk),
 * not to the last consumed position at once, so the pages the two walks hold stay few. Positions
 * the deal finds are not this rank's (another rank's, consumed) are told to `passed` at once.
 *
 * @example
 * const mine = new StreamedGopClips(() => pagedStream(plan, "shard-buffer", p)!, new PositionSet(Infinity), plan, 1, 4);
 */
export class StreamedGopClips extends StreamedDeal {
  /** The resume's walk over the order, while it has consumed positions left to meet. */
  private pre: Iterator<ClipRef | PageWait> | undefined;
  private preAt = 0;
  private preLeft: number;
  /**
   * Runs (`object:key`) the resume's walk met: clips seen and consumed. A run all seen goes
   * unless the deal will still meet it with some of its clips consumed.
   */
  private readonly taken = new Map<string, { seen: number; taken: number }>();
  /** The clip taken from the order whose run waits for the resume's walk (kept while it waits for pages). */
  private pulled: { position: number; ref: ClipRef } | undefined;
  /** Where each run met starts in the runs-end-to-end sequence, and its clips placed so far. */
  private readonly runs = new Map<string, { start: number; seen: number; size: number }>();
  private nextStart = 0;
  /** Runs met so far. */
  private met = 0;
  /**
   * Clips taken from the order but not dealt yet (the lookahead), with their places, from item
   * `aheadAt` on: a round of every rank's clips at most, taken from its front one by one (an
   * index, not Array.shift, which copies the rest each time).
   */
  private ahead: { position: number; ref: ClipRef; place: number }[] = [];
  private aheadAt = 0;
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
    passed?: PassedPositions,
  ) {
    super(consumed, rank, world, limit, passed);
    this.preLeft = consumed.count;
    if (this.preLeft > 0) this.pre = order()[Symbol.iterator]();
    this.streamFrom(order());
  }

  /** Places a turn takes (0 until the first TURN_SAMPLE_RUNS runs, or the order's end, are met). */
  get turnPlaces(): number {
    return this.turn;
  }

  protected dealNext(): RankClip {
    // The turn: from the first runs met (every rank meets the same ones).
    while (this.turn === 0) {
      if (this.ended || this.met >= TURN_SAMPLE_RUNS) {
        this.turn = Math.max(1, Math.round((GROUPS_PER_TURN * this.nextStart) / Math.max(1, this.met)));
      } else this.pull();
    }
    const round = this.turn * this.world;
    for (;;) {
      const next = this.ahead[this.aheadAt];
      if (!next) {
        if (this.ended) this.endOfOrder();
        this.pull();
        continue;
      }
      // A later round's split is known once the runs met reach its end (it is not the last, or
      // the order ended in it); the first round's is its turns whatever follows.
      const roundEnd = (Math.floor(next.place / round) + 1) * round;
      if (next.place >= round && !this.ended && this.nextStart < roundEnd) {
        this.pull();
        continue;
      }
      this.aheadAt++;
      if (this.aheadAt > 1024 && this.aheadAt * 2 > this.ahead.length) {
        this.ahead = this.ahead.slice(this.aheadAt);
        this.aheadAt = 0;
      }
      if (this.owns(next.place, round)) return { position: next.position, ref: next.ref };
      this.passed(next.position);
    }
  }

  private owns(place: number, round: number): boolean {
    if (place < round || !this.ended || place < Math.floor(this.nextStart / round) * round)
      return Math.floor((place % round) / this.turn) === this.rank;
    this.last ??= new TurnDeal(this.nextStart, 0, this.rank, this.world, this.turn);
    return this.last.owns(place);
  }

  /** Takes the order's next clip into the lookahead, placing it in its run; notes the order's end. */
  private pull(): void {
    let pulled = this.pulled;
    if (!pulled) {
      const position = this.orderAt;
      const ref = this.nextRefOrEnd();
      if (!ref) {
        // Consumed positions past the order's end: a checkpoint of another order.
        while (this.pre && this.preLeft > 0) this.preStep();
        this.ended = true;
        return;
      }
      pulled = { position, ref };
    }
    // Kept while the resume's walk waits for pages: the clip is taken from the order already.
    this.pulled = pulled;
    // The resume's walk stays ahead of this one, so no page goes that it still needs.
    while (this.pre && this.preLeft > 0 && this.preAt <= pulled.position) this.preStep();
    if (this.isConsumed(pulled.position)) {
      this.pulled = undefined;
      this.passed(pulled.position);
      return;
    }
    const { key, size } = runOf(this.plan.object(pulled.ref.object), pulled.ref.start);
    const id = `${pulled.ref.object}:${key}`;
    let run = this.runs.get(id);
    if (!run) {
      run = { start: this.nextStart, seen: 0, size: size - this.takenOf(id, size) };
      this.runs.set(id, run);
      this.nextStart += run.size;
      this.met++;
    }
    this.pulled = undefined;
    this.ahead.push({ position: pulled.position, ref: pulled.ref, place: run.start + run.seen++ });
    // A run all placed is forgotten: memory stays with the runs open in the order.
    if (run.seen === run.size) this.runs.delete(id);
  }

  /**
   * The consumed clips of run `id` (of `size` clips), met by the deal at a position the resume's
   * walk has passed: that walk goes on until it has seen the whole run, or every consumed position.
   */
  private takenOf(id: string, size: number): number {
    for (let run = this.taken.get(id); this.pre && this.preLeft > 0 && run && run.seen < size; run = this.taken.get(id))
      this.preStep();
    const run = this.taken.get(id);
    // Gone from `taken`: all seen, none consumed.
    this.taken.delete(id);
    return run?.taken ?? 0;
  }

  /** One clip of the resume's walk, counted in its run; the walk ends with the last consumed position. */
  private preStep(): void {
    const next = this.pre!.next();
    if (next.done) throw this.shortOrderAt(this.preAt);
    if (!("object" in next.value)) this.waitFor(next.value);
    const position = this.preAt++;
    const ref = next.value;
    const { key, size } = runOf(this.plan.object(ref.object), ref.start);
    const id = `${ref.object}:${key}`;
    let run = this.taken.get(id);
    if (!run) this.taken.set(id, (run = { seen: 0, taken: 0 }));
    run.seen++;
    if (this.isConsumed(position)) {
      run.taken++;
      if (--this.preLeft === 0) this.pre = undefined;
    }
    // All seen: the deal meets it later only with clips left, and then needs its count only if some were consumed.
    if (run.seen === size && (run.taken === 0 || run.taken === size)) this.taken.delete(id);
  }
}
