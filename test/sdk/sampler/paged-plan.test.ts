import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { gopsOf, makePlan, PAGE_OBJECTS, type ClipPlan, type PlannedObject } from "../../../sdk/sampler/clip-plan.js";
import { LazyPlan, PageWait } from "../../../sdk/sampler/paged-plan.js";
import { RankClips, type RankClip } from "../../../sdk/sampler/rank-clips.js";
import { StreamedGopClips, TURN_SAMPLE_RUNS } from "../../../sdk/sampler/streamed-gop-clips.js";
import { GROUPS_PER_TURN } from "../../../sdk/sampler/partition.js";
import { SettledPages } from "../../../sdk/sampler/settled-pages.js";
import { epochOrder, GOP_INTERLEAVE, PAGE_GROUP, pagedStream, PAGE_WINDOW } from "../../../sdk/sampler/shuffle.js";
import { SkipTaken } from "../../../sdk/sampler/skip-taken.js";
import { PositionSet, restore, toCheckpoint } from "../../../sdk/state/checkpoint.js";

/** Pages of `counts[k]` objects, 1..5 clips each in GOPs of two, shards of `perShard` objects cut in each page. */
function pages(counts: readonly number[], perShard: number) {
  const objects: PlannedObject[][] = counts.map((n, k) =>
    Array.from({ length: n }, (_, j) => {
      const starts = Array.from({ length: 1 + ((k * 7 + j) % 5) }, (_, c) => c * 4);
      return { key: `p${k}/v${j}`, etag: "e", starts, gops: gopsOf(starts, [0, 8, 16]) };
    }),
  );
  const shards = counts.map((n) =>
    Array.from({ length: Math.ceil(n / perShard) }, (_, s) =>
      Array.from({ length: Math.min(perShard, n - s * perShard) }, (_, i) => s * perShard + i),
    ),
  );
  return { objects, shards };
}

/** The same pages as one materialised plan (which groups shards in runs of PAGE_OBJECTS ids: full pages but the last). */
function eager(counts: readonly number[], perShard: number): ClipPlan {
  const { objects, shards } = pages(counts, perShard);
  const all: PlannedObject[] = [];
  const planShards: { objects: number[] }[] = [];
  counts.forEach((_, k) => {
    const first = all.length;
    all.push(...objects[k]!);
    for (const s of shards[k]!) planShards.push({ objects: s.map((j) => first + j) });
  });
  return makePlan(all, planShards, { frames: 4, stride: 1, align: "exact" });
}

/** A lazy plan over the same pages, reading each after a macrotask. */
function lazy(counts: readonly number[], perShard: number): LazyPlan {
  const { objects, shards } = pages(counts, perShard);
  return new LazyPlan(counts, async (k) => {
    await new Promise((r) => setImmediate(r));
    return { objects: objects[k]!, shards: shards[k]! };
  });
}

/** Every item of an order, waiting where it waits; how many waits there were. */
async function drain(order: Iterable<unknown>) {
  const out: unknown[] = [];
  let waits = 0;
  const it = order[Symbol.iterator]();
  for (let next = it.next(); !next.done; next = it.next()) {
    if (next.value instanceof PageWait) {
      waits++;
      await next.value.until;
    } else out.push(next.value);
  }
  return { out, waits };
}

describe("an order over a plan read page by page", () => {
  it("is the materialised plan's order, for none and shard-buffer", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constant(PAGE_OBJECTS), { minLength: 1, maxLength: 9 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 64 }),
        fc.nat(),
        async (counts, perShard, buffer, seed) => {
          const params = { seed, epoch: 1, buffer };
          for (const name of ["none", "shard-buffer"]) {
            const { out } = await drain(pagedStream(lazy(counts, perShard), name, params)!);
            expect(out).toEqual(epochOrder(eager(counts, perShard), name, params));
          }
        },
      ),
      { numRuns: 8 },
    );
  });

  it("reads the first window's pages (and the next, ahead) before its first clip, not every page", async () => {
    const counts = Array.from({ length: 40 }, () => PAGE_OBJECTS);
    const plan = lazy(counts, 100);
    const it = pagedStream(plan, "shard-buffer", { seed: 2, epoch: 0, buffer: 256 })![Symbol.iterator]();
    let next = it.next();
    while (next.value instanceof PageWait) {
      await next.value.until;
      next = it.next();
    }
    expect(next.done).toBe(false);
    expect(plan.asked.length).toBe(2 * PAGE_WINDOW);
    expect(pagedStream(plan, "global", { seed: 2, epoch: 0, buffer: 256 })).toBeUndefined();
  });

  it("with a fetch of its own, reads only the first window's pages before its first clip and fetches the next", async () => {
    const counts = Array.from({ length: 40 }, () => PAGE_OBJECTS);
    const { objects, shards } = pages(counts, 100);
    const reads: number[] = [];
    const fetches: number[] = [];
    const plan = new LazyPlan(
      counts,
      async (k) => {
        reads.push(k);
        await new Promise((r) => setImmediate(r));
        return { objects: objects[k]!, shards: shards[k]! };
      },
      undefined,
      (k) => fetches.push(k),
    );
    const it = pagedStream(plan, "shard-buffer", { seed: 2, epoch: 0, buffer: 256 })![Symbol.iterator]();
    let next = it.next();
    while (next.value instanceof PageWait) {
      await next.value.until;
      next = it.next();
    }
    // Settle whatever the read-ahead may have started: nothing more is read.
    for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
    expect(next.done).toBe(false);
    expect(reads.length).toBe(PAGE_WINDOW);
    expect(fetches.length).toBe(PAGE_WINDOW);
    expect(new Set([...reads, ...fetches]).size).toBe(2 * PAGE_WINDOW);
    expect(plan.prefetched).toEqual(fetches);
    // The order, walked on, reads the pages fetched ahead when it reaches them, once each.
    const { out } = await drain({ [Symbol.iterator]: () => it });
    expect(out.length).toBeGreaterThan(0);
    expect(reads.length).toBe(counts.length);
    expect(new Set(reads).size).toBe(counts.length);
  });

  it("counts each page's clips as the order passes it: every clip once the order ended, none for a plan without", async () => {
    for (const name of ["none", "shard-buffer"]) {
      const counts = Array.from({ length: 12 }, () => 20);
      const plan = lazy(counts, 3);
      const { out } = await drain(pagedStream(plan, name, { seed: 4, epoch: 0, buffer: 8 })!);
      expect(plan.clipsPassed).toBe(out.length);
      const empty = new LazyPlan([5, 5], async () => ({
        objects: Array.from({ length: 5 }, () => ({ key: "k", etag: "e", starts: [] })),
        shards: [
          [0, 1],
          [2, 3, 4],
        ],
      }));
      expect((await drain(pagedStream(empty, name, { seed: 4, epoch: 0, buffer: 8 })!)).out).toEqual([]);
      expect(empty.clipsPassed).toBe(0);
    }
  });

  it("reads those pages from one group of PAGE_GROUP neighbouring pages, so from one run of a table's directory", async () => {
    const counts = Array.from({ length: 40 }, () => PAGE_OBJECTS);
    for (let seed = 0; seed < 16; seed++) {
      const plan = lazy(counts, 100);
      const it = pagedStream(plan, "shard-buffer", { seed, epoch: 3, buffer: 256 })![Symbol.iterator]();
      let next = it.next();
      while (next.value instanceof PageWait) {
        await next.value.until;
        next = it.next();
      }
      expect(plan.asked.length).toBe(PAGE_GROUP);
      expect(new Set(plan.asked.map((k) => Math.floor(k / PAGE_GROUP))).size).toBe(1);
    }
  });

  it("drops each page once the order passed it and its clips settled: pages kept stay bounded", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 16 }), fc.nat(), async (buffer, seed) => {
        for (const name of ["none", "shard-buffer"]) {
          const counts = Array.from({ length: 40 }, () => 3);
          const dropped: number[] = [];
          const { objects, shards } = pages(counts, 1);
          const plan = new LazyPlan(
            counts,
            async (k) => ({ objects: objects[k]!, shards: shards[k]! }),
            (k) => dropped.push(k),
          );
          const settled = new SettledPages(plan);
          const it = settled.track(pagedStream(plan, name, { seed, epoch: 0, buffer })!)[Symbol.iterator]();
          let peak = 0;
          let position = 0;
          for (let next = it.next(); !next.done; next = it.next()) {
            peak = Math.max(peak, plan.resident);
            if (next.value instanceof PageWait) await next.value.until;
            else settled.settled(position++);
          }
          // The window walked and the one read ahead, and a page for each GOP run the shuffle holds.
          expect(peak).toBeLessThanOrEqual(2 * PAGE_WINDOW + (name === "none" ? 0 : buffer + GOP_INTERLEAVE));
          expect(plan.resident).toBe(0);
          expect([...dropped].sort((a, b) => a - b)).toEqual(counts.map((_, k) => k));
          expect(settled.pending).toBe(0);
        }
      }),
      { numRuns: 8 },
    );
  });

  it("deals a rank's clips once each is ready, as over the materialised plan", async () => {
    // Full pages but the last: the materialised plan groups shards by PAGE_OBJECTS runs of ids.
    const counts = [PAGE_OBJECTS, PAGE_OBJECTS, PAGE_OBJECTS, PAGE_OBJECTS, PAGE_OBJECTS, 300];
    const params = { seed: 4, epoch: 0, buffer: 32 };
    const whole = eager(counts, 50);
    for (const world of [1, 3]) {
      for (let rank = 0; rank < world; rank++) {
        const want = new RankClips(
          epochOrder(whole, "shard-buffer", params),
          new PositionSet(whole.total),
          rank,
          world,
        );
        const plan = lazy(counts, 50);
        const mine = new RankClips(
          pagedStream(plan, "shard-buffer", params)!,
          new PositionSet(whole.total),
          rank,
          world,
        );
        expect(() => mine.at(0)).toThrow("Clip 0 of this rank was asked for before ready(0) settled");
        for (let i = 0; i < mine.length; i += 97) {
          await mine.ready(i);
          expect(mine.at(i)).toEqual(want.at(i));
        }
        await mine.ready(mine.length - 1);
        expect(mine.at(mine.length - 1)).toEqual(want.at(want.length - 1));
      }
    }
  });
});

describe("a rank's clips over an order of unknown length", () => {
  const counts = [PAGE_OBJECTS, PAGE_OBJECTS, PAGE_OBJECTS, 120];
  const params = { seed: 9, epoch: 3, buffer: 16 };
  const whole = eager(counts, 40);
  const key = (c: { position: number; ref: { object: number; start: number } }) =>
    `${c.position}:${c.ref.object}:${c.ref.start}`;

  /** Every clip of the rank, each readied first, until the order ends. */
  async function all(mine: RankClips | SkipTaken) {
    const out: ReturnType<RankClips["at"]>[] = [];
    for (let i = 0; ; i++) {
      await mine.ready(i);
      const c = mine.at(i);
      if (!c) return out;
      out.push(c);
    }
  }

  it("deals every clip once, sizes within one, the length known once the order ends", async () => {
    for (const world of [1, 2, 5]) {
      const shares = await Promise.all(
        Array.from({ length: world }, async (_, rank) => {
          const mine = new RankClips(
            pagedStream(lazy(counts, 40), "shard-buffer", params)!,
            new PositionSet(Infinity),
            rank,
            world,
          );
          expect(mine.length).toBe(Infinity);
          const got = await all(mine);
          expect(mine.length).toBe(got.length);
          return got;
        }),
      );
      const sizes = shares.map((s) => s.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      const order = epochOrder(whole, "shard-buffer", params);
      expect(
        shares
          .flat()
          .map((c) => c!.position)
          .sort((a, b) => a - b),
      ).toEqual(order.map((_, p) => p));
      for (const c of shares.flat()) expect(c!.ref).toEqual(order[c!.position]);
    }
  });

  it("resumes exactly from merged checkpoints without a total, on another world size", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat(600),
        async (world, next, k) => {
          // Each rank of the first run consumes its first k clips, then every rank checkpoints.
          const checkpoints = await Promise.all(
            Array.from({ length: world }, async (_, rank) => {
              const mine = new RankClips(
                pagedStream(lazy(counts, 40), "shard-buffer", params)!,
                new PositionSet(Infinity),
                rank,
                world,
              );
              const set = new PositionSet(Infinity);
              for (let i = 0; i < k; i++) {
                await mine.ready(i);
                const c = mine.at(i);
                if (c) set.add(c.position);
              }
              return JSON.parse(
                JSON.stringify(toCheckpoint(set, { fingerprint: "f", seed: 9, epoch: 3, world, rank })),
              );
            }),
          );
          expect(checkpoints[0].total).toBeUndefined();
          const { set } = restore(checkpoints, { fingerprint: "f", total: undefined });
          const before = set.count;
          const after = await Promise.all(
            Array.from({ length: next }, (_, rank) =>
              all(new RankClips(pagedStream(lazy(counts, 40), "shard-buffer", params)!, set, rank, next)),
            ),
          );
          const positions = [...after.flat().map((c) => c!.position)];
          for (let p = 0; p < whole.total; p++) if (set.has(p)) positions.push(p);
          expect(positions.sort((a, b) => a - b)).toEqual(Array.from({ length: whole.total }, (_, p) => p));
          expect(set.count).toBe(before);
          expect(new Set(after.flat().map((c) => key(c!))).size).toBe(whole.total - before);
        },
      ),
      { numRuns: 10 },
    );
  });

  it("resumes one rank alone from its own checkpoint (its base), as the uninterrupted rank goes on", async () => {
    const world = 3;
    const rank = 1;
    const uninterrupted = await all(
      new RankClips(pagedStream(lazy(counts, 40), "shard-buffer", params)!, new PositionSet(Infinity), rank, world),
    );
    const set = new PositionSet(Infinity);
    for (const c of uninterrupted.slice(0, 50)) set.add(c!.position);
    const own = toCheckpoint(set, {
      fingerprint: "f",
      seed: 9,
      epoch: 3,
      world,
      rank,
      base: new PositionSet(Infinity),
    });
    const r = restore(JSON.parse(JSON.stringify(own)), { fingerprint: "f", total: undefined, rank, world });
    const share = new RankClips(pagedStream(lazy(counts, 40), "shard-buffer", params)!, r.base!, rank, world);
    expect(await all(new SkipTaken(share, r.set, r.set.count - r.base!.count))).toEqual(uninterrupted.slice(50));
  });
});

describe("a rank's GOP runs over an order of unknown length (last round dealt once the end is met)", () => {
  const counts = [PAGE_OBJECTS, PAGE_OBJECTS, 700];
  const params = { seed: 5, epoch: 1, buffer: 16 };
  const whole = eager(counts, 40);
  const order = epochOrder(whole, "shard-buffer", params);
  const share = (plan: LazyPlan, set: PositionSet, rank: number, world: number) =>
    new StreamedGopClips(() => pagedStream(plan, "shard-buffer", params)!, set, plan, rank, world);

  async function all(mine: { ready(i: number): Promise<void>; at(i: number): RankClip | undefined }) {
    const out: RankClip[] = [];
    for (let i = 0; ; i++) {
      await mine.ready(i);
      const c = mine.at(i);
      if (!c) return out;
      out.push(c);
    }
  }
  const runKey = (c: RankClip) => {
    const o = whole.objects[c.ref.object]!;
    return `${c.ref.object}:${o.gops![o.starts.indexOf(c.ref.start)]}`;
  };

  it("deals every clip once, in epoch order per rank, sizes within one, few runs split", async () => {
    for (const world of [1, 2, 3, 7]) {
      const plan = lazy(counts, 40);
      const shares = await Promise.all(
        Array.from({ length: world }, (_, r) => all(share(plan, new PositionSet(Infinity), r, world))),
      );
      const sizes = shares.map((s) => s.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      expect(
        shares
          .flat()
          .map((c) => c.position)
          .sort((a, b) => a - b),
      ).toEqual(order.map((_, p) => p));
      for (const s of shares) {
        for (const c of s) expect(c.ref).toEqual(order[c.position]);
        expect(s.map((c) => c.position)).toEqual([...s.map((c) => c.position)].sort((a, b) => a - b));
      }
      const owners = new Map<string, Set<number>>();
      shares.forEach((s, r) => s.forEach((c) => owners.set(runKey(c), (owners.get(runKey(c)) ?? new Set()).add(r))));
      const split = [...owners.values()].filter((o) => o.size > 1).length;
      // Only the run at a turn's end (about every 8 runs of a rank) and the last round's may be split.
      expect(split).toBeLessThanOrEqual(Math.ceil(owners.size / 8) + world);
    }
  });

  it("walks the order only to a rank's own first turn before its first clip, not to its round's end", async () => {
    // A world of 32: a round is 32 turns of about 8 runs, several hundred clips past the first 64 runs.
    const world = 32;
    for (const rank of [0, 5, 31]) {
      let walked = 0;
      let sample = 0;
      const plan = lazy(counts, 40);
      const mine = new StreamedGopClips(
        () =>
          (function* () {
            const runs = new Set<string>();
            for (const item of pagedStream(plan, "shard-buffer", params)!) {
              if (!(item instanceof PageWait)) {
                walked++;
                const run = runKey({ position: 0, ref: item });
                // The clips the deal takes to meet the first TURN_SAMPLE_RUNS runs (they fix the turn).
                if (!runs.has(run) && runs.add(run).size === TURN_SAMPLE_RUNS) sample = walked;
              }
              yield item;
            }
          })(),
        new PositionSet(Infinity),
        plan,
        rank,
        world,
      );
      await mine.ready(0);
      const first = mine.at(0)!;
      expect(walked).toBe(Math.max(sample, first.position + 1));
      // Its own turn comes rank turns into the round: the round's end is world turns in.
      expect(walked).toBeLessThan(world * mine.turnPlaces);
    }
  });

  it("deals a first round the order ends in by its turns: every clip once, sizes within one turn", async () => {
    // 40 objects of 1..5 clips: fewer places than a round of 16 turns of 8 runs.
    const few = [40];
    const fewOrder = epochOrder(eager(few, 10), "shard-buffer", params);
    const world = 16;
    const deals = Array.from({ length: world }, (_, r) => share(lazy(few, 10), new PositionSet(Infinity), r, world));
    const shares = await Promise.all(deals.map(all));
    const turn = deals[0]!.turnPlaces;
    expect(fewOrder.length).toBeLessThan(world * turn);
    expect(
      shares
        .flat()
        .map((c) => c.position)
        .sort((a, b) => a - b),
    ).toEqual(fewOrder.map((_, p) => p));
    // Its turns as they come: rank r has the places of its turn, the later ranks none.
    const sizes = shares.map((s) => s.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(turn);
    expect(sizes.slice(Math.ceil(fewOrder.length / turn))).toEqual(
      Array.from({ length: world - Math.ceil(fewOrder.length / turn) }, () => 0),
    );
  });

  it("resumes exactly from merged checkpoints on another world size, and one rank alone from its own", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat(500),
        async (world, next, k) => {
          const plan = lazy(counts, 40);
          const firstRun = await Promise.all(
            Array.from({ length: world }, (_, r) => all(share(plan, new PositionSet(Infinity), r, world))),
          );
          const checkpoints = firstRun.map((s, rank) => {
            const set = new PositionSet(Infinity);
            for (const c of s.slice(0, k)) set.add(c.position);
            return JSON.parse(
              JSON.stringify(
                toCheckpoint(set, {
                  fingerprint: "f",
                  seed: 5,
                  epoch: 1,
                  world,
                  rank,
                  base: new PositionSet(Infinity),
                }),
              ),
            );
          });
          const { set } = restore(checkpoints, { fingerprint: "f", total: undefined });
          const after = await Promise.all(
            Array.from({ length: next }, (_, r) => all(share(lazy(counts, 40), set, r, next))),
          );
          const positions = after.flat().map((c) => c.position);
          for (let p = 0; p < whole.total; p++) if (set.has(p)) positions.push(p);
          expect(positions.sort((a, b) => a - b)).toEqual(order.map((_, p) => p));
          const sizes = after.map((s) => s.length);
          // Within one, or a turn (GROUPS_PER_TURN runs of at most 2 clips) where what is left is within a round.
          const left = whole.total - set.count;
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(
            left < next * GROUPS_PER_TURN * 2 ? GROUPS_PER_TURN * 2 : 1,
          );
          // Rank 0 alone, from its own checkpoint: the rest of its uninterrupted share.
          const own = restore(checkpoints[0], { fingerprint: "f", total: undefined, rank: 0, world });
          if (world > 1) {
            const alone = new SkipTaken(
              share(lazy(counts, 40), own.base!, 0, world),
              own.set,
              own.set.count - own.base!.count,
            );
            expect(await all(alone)).toEqual(firstRun[0]!.slice(k));
          }
        },
      ),
      { numRuns: 8 },
    );
  });

  it("keeps a bounded number of pages on every rank of several, over a whole epoch and a resume late in it", async () => {
    // One object of 6 clips (GOP runs of 2, 1, 2, 1) to a page: each GOP run the deal holds may hold a page.
    const many = Array.from({ length: 400 }, () => 1);
    const starts = [0, 4, 8, 12, 16, 20];
    const objects = many.map((_, k) => [{ key: `p${k}`, etag: "e", starts, gops: gopsOf(starts, [0, 6, 12, 18]) }]);
    const total = many.length * 6;
    const world = 4;
    const buffer = 2;
    const lag = 3;
    const turn = Math.round(GROUPS_PER_TURN * 1.5);
    // The single rank's bound (the window walked and the one read ahead, a page for each GOP run in
    // the buffer and interleave, one for each clip unsettled), and a page for each clip the deal
    // holds undecided: the first TURN_SAMPLE_RUNS runs at the epoch's start, a round after.
    const bound = 2 * PAGE_WINDOW + buffer + GOP_INTERLEAVE + lag + Math.max(TURN_SAMPLE_RUNS, world * turn);
    expect(bound).toBeLessThan(many.length / 4);
    const walk = async (rank: number, set: PositionSet) => {
      const plan = new LazyPlan(many, async (k) => ({ objects: objects[k]!, shards: [[0]] }));
      const settled = new SettledPages(plan);
      const mine = new StreamedGopClips(
        () => settled.track(pagedStream(plan, "shard-buffer", { seed: 7, epoch: 0, buffer })!),
        set,
        plan,
        rank,
        world,
        undefined,
        settled,
      );
      let peak = 0;
      const got: RankClip[] = [];
      for (let i = 0; ; i++) {
        await mine.ready(i);
        peak = Math.max(peak, plan.resident);
        const c = mine.at(i);
        if (!c) break;
        got.push(c);
        // Each clip settled `lag` clips after it is dealt, as a pipeline delivers.
        if (i >= lag) settled.settled(got[i - lag]!.position);
      }
      return { got, peak };
    };
    const whole = await Promise.all(Array.from({ length: world }, (_, r) => walk(r, new PositionSet(Infinity))));
    for (const r of whole) expect(r.peak).toBeLessThanOrEqual(bound);
    const positions = whole.flatMap((r) => r.got.map((c) => c.position)).sort((a, b) => a - b);
    expect(positions).toEqual(Array.from({ length: total }, (_, p) => p));
    // Every rank consumed its first 3/4 of its share: the resume walks the order past them all.
    const set = new PositionSet(Infinity);
    for (const r of whole) for (const c of r.got.slice(0, (r.got.length * 3) >> 2)) set.add(c.position);
    const rest = await Promise.all(Array.from({ length: world }, (_, r) => walk(r, set)));
    for (const r of rest) expect(r.peak).toBeLessThanOrEqual(bound);
    const after = rest.flatMap((r) => r.got.map((c) => c.position));
    expect(after.length).toBe(total - set.count);
    expect(
      [...after, ...whole.flatMap((r) => r.got.map((c) => c.position)).filter((p) => set.has(p))].sort((a, b) => a - b),
    ).toEqual(Array.from({ length: total }, (_, p) => p));
  });
});
