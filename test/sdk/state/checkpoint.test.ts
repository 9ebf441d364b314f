import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { partition } from "../../../sdk/sampler/partition.js";
import {
  mergeCheckpoints,
  PositionSet,
  restore,
  toCheckpoint,
  type Checkpoint,
} from "../../../sdk/state/checkpoint.js";

const meta = { fingerprint: "f", seed: 1, epoch: 0 };

/** One run: each rank consumes a prefix of its share of what is left, then all checkpoint. */
function runOnce(
  total: number,
  resume: Checkpoint | undefined,
  world: number,
  taken: (rank: number, share: number) => number,
) {
  const delivered: number[] = [];
  const states: Checkpoint[] = [];
  for (let rank = 0; rank < world; rank++) {
    const set = resume ? restore(resume, { fingerprint: "f", total }).set : new PositionSet(total);
    const mine = partition(set.remaining(), rank, world);
    const k = taken(rank, mine.length);
    for (const p of mine.slice(0, k)) {
      set.add(p);
      delivered.push(p);
    }
    states.push(toCheckpoint(set, { ...meta, world, rank }));
  }
  return { delivered, state: mergeCheckpoints(states) };
}

describe("exact resume", () => {
  it("delivers every position exactly once across runs with changing world sizes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 400 }),
        fc.array(
          fc.tuple(
            fc.integer({ min: 1, max: 9 }),
            fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 9, maxLength: 9 }),
          ),
          { minLength: 1, maxLength: 4 },
        ),
        (total, runs) => {
          let state: Checkpoint | undefined;
          const all: number[] = [];
          for (const [world, fractions] of runs) {
            const r = runOnce(total, state, world, (rank, share) => Math.floor(share * fractions[rank]!));
            all.push(...r.delivered);
            state = r.state;
          }
          // A final run that takes everything finishes the epoch.
          all.push(...runOnce(total, state, 3, (_r, share) => share).delivered);
          expect(all.length).toBe(total);
          expect(new Set(all).size).toBe(total);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("refuses a checkpoint of another plan or with ranks missing", () => {
    const set = new PositionSet(10);
    set.add(3);
    const c0 = toCheckpoint(set, { ...meta, world: 2, rank: 0 });
    const c1 = toCheckpoint(new PositionSet(10), { ...meta, world: 2, rank: 1 });
    expect(() => restore(c0, { fingerprint: "g", total: 10 })).toThrow(
      expect.objectContaining({ code: "ERR_RESUME_MISMATCH" }),
    );
    expect(() => restore(c0, { fingerprint: "f", total: 10 })).toThrow(
      expect.objectContaining({ code: "ERR_RESUME_INCOMPLETE" }),
    );
    const merged = restore([c0, c1], { fingerprint: "f", total: 10 });
    expect(merged.set.count).toBe(1);
    expect(merged.set.has(3)).toBe(true);
    expect(() => mergeCheckpoints([c0, { ...c1, epoch: 5 }])).toThrow(
      expect.objectContaining({ code: "ERR_RESUME_MISMATCH" }),
    );
  });

  it("resumes a rank's own checkpoint alone on that rank and world, dealing from its base", () => {
    const base = new PositionSet(10);
    base.add(1);
    const set = new PositionSet(10, base.bits.slice());
    set.add(4);
    const own = toCheckpoint(set, { ...meta, world: 2, rank: 1, base });
    const r = restore(own, { fingerprint: "f", total: 10, rank: 1, world: 2 });
    expect([r.set.count, r.base?.count, r.base?.has(1)]).toEqual([2, 1, true]);
    expect(toCheckpoint(set, { ...meta, world: 2, rank: 1, base: new PositionSet(10) }).base).toBe("");
    for (const [rank, world] of [
      [0, 2],
      [1, 3],
    ] as const)
      expect(() => restore(own, { fingerprint: "f", total: 10, rank, world })).toThrow(
        expect.objectContaining({ code: "ERR_RESUME_INCOMPLETE" }),
      );
    expect(mergeCheckpoints([own]).base).toBeUndefined();
    const broken = {
      ...own,
      base: toCheckpoint(new PositionSet(10, new Uint8Array([0, 2])), { ...meta, world: 2, rank: 1 }).consumed,
    };
    expect(() => restore(broken, { fingerprint: "f", total: 10, rank: 1, world: 2 })).toThrow(
      expect.objectContaining({ code: "ERR_RESUME_INVALID" }),
    );
  });

  it("refuses a checkpoint of an earlier epoch order and says so, even where its fingerprint would match", () => {
    const { order, ...before } = toCheckpoint(new PositionSet(10), { ...meta, world: 1, rank: 0 });
    expect(order).toBe(7);
    for (const [old, was] of [
      [before, 2],
      [{ ...before, order: 2 }, 2],
      [{ ...before, order: 3 }, 3],
      // Order 4 shuffled every shard at once: its positions are other clips of order 7.
      [{ ...before, order: 4 }, 4],
      // Order 5 permuted pages over the whole listing, not within groups of neighbours.
      [{ ...before, order: 5 }, 5],
      // Order 6 cut the last round of a lazy deal to even the shares: other positions are a rank's.
      [{ ...before, order: 6 }, 6],
    ] as const)
      expect(() => restore(old, { fingerprint: "f", total: 10 })).toThrow(
        expect.objectContaining({
          code: "ERR_RESUME_MISMATCH",
          message: expect.stringContaining(`Expected a checkpoint of epoch order 7 but received one of order ${was}`),
        }),
      );
  });

  it("round-trips through JSON", () => {
    const set = new PositionSet(13);
    [0, 7, 12].forEach((p) => set.add(p));
    const c = JSON.parse(JSON.stringify(toCheckpoint(set, { ...meta, world: 1, rank: 0 })));
    expect(restore(c, { fingerprint: "f", total: 13 }).set.remaining()).toEqual([1, 2, 3, 4, 5, 6, 8, 9, 10, 11]);
  });
});
