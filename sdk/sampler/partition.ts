import type { ClipPlan, ClipRef } from "./clip-plan.js";

/** A rank's turn takes about this many groups (GOP runs): one group per turn may be split between two ranks. */
export const GROUPS_PER_TURN = 8;

/** Which group each position of the epoch order is in: ids below `count`. */
export interface Groups {
  readonly count: number;
  readonly of: (position: number) => number;
}

/**
 * Which positions of the epoch order a rank delivers: the positions not yet consumed, disjoint
 * and covering across ranks, sizes differing by at most one, each rank's in epoch order.
 *
 * Without `groupOf` (or when no two positions share a group) they are dealt round-robin. With
 * it, positions of one group (the clips of one GOP run) go to one rank: the groups, in the order
 * they first appear, are laid end to end and dealt in turns of about GROUPS_PER_TURN groups, so
 * a rank decodes whole GOPs and only the group at the end of a turn may be split between two
 * ranks. Every rank still walks the same part of the order at the same time (good for a
 * host-shared cache).
 *
 * @example
 * partition([0, 1, 2, 3, 4], 1, 2); // [1, 3]
 * partition([0, 1, 2, 3], 0, 2, { count: 2, of: (p) => (p < 2 ? 0 : 1) }); // [0, 1]
 */
export function partition(remaining: readonly number[], rank: number, world: number, groupOf?: Groups): number[] {
  if (world === 1) return [...remaining];
  // Groups numbered in the order they first appear; typed arrays, as an epoch may hold 10^7 clips.
  const ordinal = groupOf ? new Int32Array(groupOf.count).fill(-1) : undefined;
  const sizes: number[] = [];
  const groups = groupOf ? new Int32Array(remaining.length) : undefined;
  if (groupOf) {
    for (let i = 0; i < remaining.length; i++) {
      const key = groupOf.of(remaining[i]!);
      let g = ordinal![key]!;
      if (g < 0) ordinal![key] = g = sizes.push(0) - 1;
      sizes[g]!++;
      groups![i] = g;
    }
  }
  if (!groups || sizes.length === remaining.length) {
    const out: number[] = [];
    for (let i = rank; i < remaining.length; i += world) out.push(remaining[i]!);
    return out;
  }
  const n = remaining.length;
  // Where each group starts in the groups-end-to-end sequence.
  const startOf = new Float64Array(sizes.length);
  for (let g = 1; g < sizes.length; g++) startOf[g] = startOf[g - 1]! + sizes[g - 1]!;
  const deal = new TurnDeal(n, sizes.length, rank, world);
  const seen = new Float64Array(sizes.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const g = groups[i]!;
    if (deal.owns(startOf[g]! + seen[g]!++)) out.push(remaining[i]!);
  }
  return out;
}

/**
 * Which places of the groups-end-to-end sequence of `n` items in `groups` groups a rank takes:
 * turns of about GROUPS_PER_TURN groups, rank after rank, the last round cut so that shares
 * differ by at most one. `partition` and the streamed GopRankClips deal with it.
 */
export class TurnDeal {
  private readonly turn: number;
  private readonly round: number;
  private readonly fullEnd: number;
  private readonly from: number[];
  private readonly to: number[];

  constructor(
    n: number,
    groups: number,
    private readonly rank: number,
    world: number,
    /** Items a turn takes; default: about GROUPS_PER_TURN groups. */
    turn = Math.max(1, Math.round((GROUPS_PER_TURN * n) / groups)),
  ) {
    this.turn = turn;
    // Whole rounds (every rank a full turn) are plain arithmetic; only the last round is walked.
    this.round = this.turn * world;
    this.fullEnd = Math.floor(Math.floor(n / world) / this.turn) * this.round;
    [this.from, this.to] = lastTurns(n, world, this.turn, rank, this.fullEnd);
  }

  owns(at: number): boolean {
    return at < this.fullEnd ? Math.floor((at % this.round) / this.turn) === this.rank : owns(this.from, this.to, at);
  }
}

/**
 * The stretches [from[k], to[k]) from `start` on of the sequence of `n` that `rank` takes:
 * ranks take turns of `turn` items each, in rank order, until each has its share (⌊n / world⌋,
 * one more for the first n mod world ranks); before `start` every rank had whole turns.
 */
function lastTurns(n: number, world: number, turn: number, rank: number, start: number): [number[], number[]] {
  const done = start / world;
  const left = Array.from({ length: world }, (_, r) => Math.floor(n / world) + (r < n % world ? 1 : 0) - done);
  const from: number[] = [];
  const to: number[] = [];
  let at = start;
  while (at < n) {
    for (let r = 0; r < world; r++) {
      const take = Math.min(turn, left[r]!);
      if (take === 0) continue;
      if (r === rank) from.push(at), to.push(at + take);
      left[r]! -= take;
      at += take;
    }
  }
  return [from, to];
}

/** Whether `at` lies in one of the ascending stretches (binary search). */
function owns(from: readonly number[], to: readonly number[], at: number): boolean {
  let lo = 0;
  let hi = from.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (at < from[mid]!) hi = mid - 1;
    else if (at >= to[mid]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The GOP runs of a plan: how many, the clips of each, and which run a clip is in. */
export interface PlanRuns {
  readonly count: number;
  readonly sizes: Int32Array;
  of(ref: ClipRef): number;
}

/**
 * The GOP runs of the plan's clips (an object's clips that open with the same keyframe),
 * numbered densely in object order, without the epoch order. Undefined when no two clips share
 * a GOP (keyframe-aligned clips, images, arrays): then there is nothing to keep together.
 *
 * @example
 * const runs = planRuns(plan); // runs?.of({ object: 3, start: 16 })
 */
export function planRuns(plan: ClipPlan): PlanRuns | undefined {
  const base = new Float64Array(plan.objects.length);
  let clips = 0;
  for (let o = 0; o < plan.objects.length; o++) (base[o] = clips), (clips += plan.objects[o]!.starts.length);
  const runOf = new Int32Array(clips);
  let runs = 0;
  let shared = false;
  plan.objects.forEach((obj, o) => {
    const { starts, gops } = obj;
    for (let i = 0; i < starts.length; i++) {
      const same = gops !== undefined && i > 0 && gops[i] === gops[i - 1];
      shared ||= same;
      runOf[base[o]! + i] = same ? runs - 1 : runs++;
    }
  });
  if (!shared) return undefined;
  const sizes = new Int32Array(runs);
  for (const r of runOf) sizes[r]!++;
  return {
    count: runs,
    sizes,
    of: (ref) => {
      const { starts } = plan.objects[ref.object]!;
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (starts[mid]! < ref.start) lo = mid + 1;
        else hi = mid;
      }
      return runOf[base[ref.object]! + lo]!;
    },
  };
}

/**
 * The GOP run each position of the epoch order belongs to: the groups for `partition`.
 * Undefined when no two clips share a GOP.
 *
 * @example
 * partition(remaining, rank, world, gopGroups(plan, (p) => order[p]!));
 */
export function gopGroups(plan: ClipPlan, refAt: (position: number) => ClipRef): Groups | undefined {
  const runs = planRuns(plan);
  return runs && { count: runs.count, of: (position) => runs.of(refAt(position)) };
}
