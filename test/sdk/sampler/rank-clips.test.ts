import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { gopsOf, makePlan, type ClipPlan, type ClipRef, type PlannedObject } from "../../../sdk/sampler/clip-plan.js";
import { GopRankClips } from "../../../sdk/sampler/gop-rank-clips.js";
import { gopGroups, partition, planRuns } from "../../../sdk/sampler/partition.js";
import { RankClips, type ClipSequence, type RankClip } from "../../../sdk/sampler/rank-clips.js";
import { epochOrder, epochStream, registerShuffle } from "../../../sdk/sampler/shuffle.js";
import { PositionSet } from "../../../sdk/state/checkpoint.js";

/** `objects` objects of 1..7 clips on keyframes 0, 8, 16, `perShard` to a shard. */
function plan(objects: number, perShard: number, wrap: (o: PlannedObject[]) => PlannedObject[] = (o) => o): ClipPlan {
  const objs = Array.from({ length: objects }, (_, i) => {
    const starts = Array.from({ length: 1 + (i % 7) }, (_, c) => c * 4);
    return { key: `v${i}.mp4`, etag: "e", starts, gops: gopsOf(starts, [0, 8, 16]) };
  });
  const shards = [];
  for (let i = 0; i < objects; i += perShard)
    shards.push({ objects: Array.from({ length: Math.min(perShard, objects - i) }, (_, k) => i + k) });
  const p = makePlan(objs, shards, { frames: 4, stride: 1, align: "keyframe" });
  return { ...p, objects: wrap(objs) };
}
const digest = (refs: readonly { object: number; start: number }[]) =>
  createHash("sha256")
    .update(refs.map((c) => `${c.object}:${c.start}`).join(","))
    .digest("hex")
    .slice(0, 16);

describe("the epoch order streams and stays the order it was", () => {
  it("is, per algorithm, the order the materialising implementation gave (pinned: checkpoints replay it)", () => {
    const p = plan(300, 16);
    const params = { seed: 11, epoch: 2, buffer: 64 };
    // Digests of the order before it streamed; a change here breaks every checkpoint's resume.
    expect({
      none: digest(epochOrder(p, "none", params)),
      "shard-buffer": digest(epochOrder(p, "shard-buffer", params)),
      global: digest(epochOrder(p, "global", params)),
    }).toEqual({
      none: "6cd9d270611a6d43",
      "shard-buffer": "b2d1a54c1f1242cb",
      global: "f3313dce62e6ac21",
    });
    expect(p.total).toBe(1197);
  });

  it("shard-buffer's first clip reads O(buffer) objects of the plan, not the epoch's", () => {
    const touched = new Set<number>();
    const p = plan(
      100_000,
      1000,
      (objs) =>
        new Proxy(objs, {
          get: (t, k) => (typeof k === "string" && /^\d+$/.test(k) && touched.add(Number(k)), Reflect.get(t, k)),
        }),
    );
    const mine = new RankClips(
      epochStream(p, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 }),
      new PositionSet(p.total),
      3,
      8,
    );
    expect(mine.length).toBe(Math.ceil((p.total - 3) / 8));
    expect(mine.at(0)!.position).toBe(3);
    expect(mine.at(15)!.position).toBe(3 + 15 * 8);
    // 256 GOP runs fill the buffer (≤ 3 per object), then one more run per clip out.
    expect(touched.size).toBeLessThan(400);
    expect(touched.size).toBeGreaterThan(0);
  });
});

/**
 * What `deal` hands each rank equals partition over the materialised order (with the plan's
 * GOP runs as groups when `grouped`), for any plan, consumed set, rank, world, limit.
 */
function expectDealsAsPartition(
  minWorld: number,
  grouped: boolean,
  deal: (
    p: ClipPlan,
    order: () => Iterable<ClipRef>,
    consumed: PositionSet,
    rank: number,
    world: number,
    limit: number | undefined,
  ) => ClipSequence<RankClip> | undefined,
): void {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 60 }),
      fc.integer({ min: 1, max: 9 }),
      fc.nat(),
      fc.integer({ min: minWorld, max: 5 }),
      fc.array(fc.boolean(), { maxLength: 240 }),
      fc.option(fc.nat(40), { nil: undefined }),
      (objects, perShard, seed, world, consumedBits, limit) => {
        const p = plan(objects, perShard);
        const consumed = new PositionSet(p.total);
        consumedBits.forEach((b, i) => b && i < p.total && consumed.add(i));
        for (const name of ["none", "shard-buffer", "global"]) {
          const params = { seed, epoch: seed % 4, buffer: 1 + (seed % 20) };
          const order = epochOrder(p, name, params);
          const groups = grouped ? gopGroups(p, (i) => order[i]!) : undefined;
          for (let rank = 0; rank < world; rank++) {
            const mine = deal(p, () => epochStream(p, name, params), consumed, rank, world, limit);
            // No GOP shared (every object one clip): open() deals with RankClips.
            if (!mine) return;
            let want = partition(consumed.remaining(), rank, world, groups).map((position) => ({
              position,
              ref: order[position]!,
            }));
            if (limit !== undefined) want = want.slice(0, limit);
            expect(Array.from({ length: mine.length }, (_, i) => mine.at(i))).toEqual(want);
            expect(mine.at(mine.length)).toBeUndefined();
          }
        }
      },
    ),
    { numRuns: 150 },
  );
}

describe("RankClips", () => {
  it("deals exactly what partition over the materialised order deals, for any consumed set, rank, world, limit", () => {
    expectDealsAsPartition(
      1,
      false,
      (_p, order, consumed, rank, world, limit) => new RankClips(order(), consumed, rank, world, limit),
    );
  });

  it("deals from the consumed set as it was at open, whatever the run consumes meanwhile", () => {
    const p = plan(20, 4);
    const consumed = new PositionSet(p.total);
    consumed.add(0);
    const mine = new RankClips(epochStream(p, "none", { seed: 0, epoch: 0, buffer: 1 }), consumed, 0, 2);
    expect(mine.at(0)!.position).toBe(1);
    // The run settles positions it delivered into the live set; later deals must not shift.
    for (let i = 1; i < 10; i++) consumed.add(i);
    expect(mine.at(1)!.position).toBe(3);
    expect(mine.at(2)!.position).toBe(5);
  });

  it("forgets the clips delivered, keeping the rest of the deal as it was", () => {
    const p = plan(30, 4);
    const order = () => epochStream(p, "shard-buffer", { seed: 2, epoch: 0, buffer: 4 });
    const whole = new RankClips(order(), new PositionSet(p.total), 1, 3);
    const mine = new RankClips(order(), new PositionSet(p.total), 1, 3);
    const all = Array.from({ length: whole.length }, (_, i) => whole.at(i)!);
    for (let i = 0; i < all.length; i++) {
      expect(mine.at(i)).toEqual(all[i]);
      // Delivered two behind: what is kept is the two since, not the epoch.
      if (i >= 2) mine.forget(all[i - 2]!.position);
    }
    expect(() => mine.at(0)).toThrow(RangeError);
    expect((mine as unknown as { done: unknown[] }).done.length).toBeLessThanOrEqual(2);
  });

  it("says so when a registered algorithm orders fewer clips than the epoch has", () => {
    registerShuffle("short", (pl, q) => epochOrder(pl, "none", q).slice(1));
    const p = plan(4, 2);
    const mine = new RankClips(
      epochStream(p, "short", { seed: 0, epoch: 0, buffer: 1 }),
      new PositionSet(p.total),
      0,
      1,
    );
    expect(() => mine.at(mine.length - 1)).toThrow(
      expect.objectContaining({
        code: "ERR_INVALID_OPTION",
        message: `Expected the shuffle to order all ${p.total} clips of the epoch but received ${p.total - 1}`,
      }),
    );
  });
});

describe("GopRankClips", () => {
  it("deals exactly what partition over the materialised order and its GOP runs deals, for any consumed set", () => {
    expectDealsAsPartition(2, true, (p, order, consumed, rank, world, limit) => {
      const runs = planRuns(p);
      return runs && new GopRankClips(order, consumed, runs, rank, world, limit);
    });
  });

  it("takes from the epoch order only as far as the first clips, not the whole epoch", () => {
    const p = plan(100_000, 1000);
    let pulled = 0;
    const counted = function* () {
      for (const ref of epochStream(p, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 })) {
        pulled++;
        yield ref;
      }
    };
    const mine = new GopRankClips(counted, new PositionSet(p.total), planRuns(p)!, 1, 4);
    expect(pulled).toBe(0);
    for (let i = 0; i < 16; i++) mine.at(i);
    expect(mine.length).toBe(Math.floor(p.total / 4) + (1 < p.total % 4 ? 1 : 0));
    expect(pulled).toBeGreaterThanOrEqual(16);
    expect(pulled).toBeLessThan(1000);
  });
});

describe("a small resumed deal, pinned (the epoch order each rank replays)", () => {
  const p = plan(12, 3);
  const params = { seed: 7, epoch: 1, buffer: 4 };
  const consumed = new PositionSet(p.total);
  for (const at of [0, 2, 5, 6]) consumed.add(at);
  const dealt = (mine: ClipSequence<RankClip>): string[] =>
    Array.from({ length: mine.length }, (_, i) => mine.at(i)!).map(
      (c) => `${c.position}:${c.ref.object}/${c.ref.start}`,
    );

  it("RankClips", () => {
    const mine = new RankClips(epochStream(p, "shard-buffer", params), consumed, 1, 3);
    // Every third unconsumed position from the second on (3, 8, 11: 0, 2, 5 and 6 are consumed).
    expect(dealt(mine)).toEqual([
      "3:10/8",
      "8:10/12",
      "11:6/12",
      "14:8/4",
      "17:2/4",
      "20:6/0",
      "23:10/4",
      "26:4/0",
      "29:4/16",
      "32:6/4",
      "35:5/8",
      "38:5/20",
      "41:5/12",
    ]);
  });

  it("GopRankClips", () => {
    const mine = new GopRankClips(() => epochStream(p, "shard-buffer", params), consumed, planRuns(p)!, 1, 3);
    // Every clip of a GOP run goes to one rank: object 6's at 0 and 4, at 16, 20 and 24.
    expect(dealt(mine)).toEqual([
      "16:1/0",
      "18:1/4",
      "19:3/8",
      "20:6/0",
      "21:10/0",
      "22:6/16",
      "23:10/4",
      "24:6/20",
      "25:2/8",
      "26:4/0",
      "27:3/12",
      "32:6/4",
      "40:6/24",
    ]);
  });
});
