import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { gopsOf, makePlan, PAGE_OBJECTS, pageStartsOf, type ClipPlan } from "../../../sdk/sampler/clip-plan.js";
import { gopGroups, partition } from "../../../sdk/sampler/partition.js";
import {
  bufferShuffle,
  epochOrder,
  GOP_INTERLEAVE,
  interleaveRuns,
  PAGE_GROUP,
  PAGE_WINDOW,
  registerShuffle,
  shuffleNames,
} from "../../../sdk/sampler/shuffle.js";
import { seededRng } from "../../../sdk/sampler/rng.js";

function plan(objects: number, clipsEach: number, perShard: number): ClipPlan {
  const objs = Array.from({ length: objects }, (_, i) => ({
    key: `v${i}.mp4`,
    etag: "e",
    starts: Array.from({ length: clipsEach }, (_, c) => c * 8),
  }));
  const shards = [];
  for (let i = 0; i < objects; i += perShard)
    shards.push({ objects: Array.from({ length: Math.min(perShard, objects - i) }, (_, k) => i + k) });
  return makePlan(objs, shards, { frames: 8, stride: 1, align: "keyframe" });
}
const id = (c: { object: number; start: number }) => `${c.object}:${c.start}`;

describe("epoch order", () => {
  const p = plan(20, 5, 3);
  it.each(shuffleNames())("%s is a permutation of every clip, deterministic per (seed, epoch)", (name) => {
    const a = epochOrder(p, name, { seed: 3, epoch: 1, buffer: 16 });
    expect(a).toHaveLength(p.total);
    expect(new Set(a.map(id)).size).toBe(p.total);
    expect(epochOrder(p, name, { seed: 3, epoch: 1, buffer: 16 })).toEqual(a);
  });
  it("differs between epochs and seeds", () => {
    const a = epochOrder(p, "shard-buffer", { seed: 3, epoch: 1, buffer: 16 }).map(id);
    expect(epochOrder(p, "shard-buffer", { seed: 3, epoch: 2, buffer: 16 }).map(id)).not.toEqual(a);
    expect(epochOrder(p, "shard-buffer", { seed: 4, epoch: 1, buffer: 16 }).map(id)).not.toEqual(a);
  });
  it("none keeps plan order and false means none", () => {
    expect(epochOrder(p, false, { seed: 3, epoch: 1, buffer: 16 })).toEqual(
      epochOrder(p, "none", { seed: 9, epoch: 9, buffer: 1 }),
    );
    expect(epochOrder(p, "none", { seed: 0, epoch: 0, buffer: 1 })[5]).toEqual({ object: 1, start: 0 });
  });
  it("rejects an unknown algorithm by name, and takes registered ones", () => {
    expect(() => epochOrder(p, "nope", { seed: 0, epoch: 0, buffer: 1 })).toThrow(
      /Expected one of "none", .* for shuffle but received "nope"/,
    );
    registerShuffle("reverse", (pl, q) => epochOrder(pl, "none", q).reverse());
    expect(epochOrder(p, "reverse", { seed: 0, epoch: 0, buffer: 1 })[0]).toEqual({ object: 19, start: 32 });
  });
  it("bufferShuffle emits no item earlier than buffer size allows", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 40 }), fc.integer(), (n, size, seed) => {
        const items = Array.from({ length: n }, (_, i) => i);
        const out = bufferShuffle(items, size, seededRng(seed >>> 0, 0, "t"));
        expect([...out].sort((a, b) => a - b)).toEqual(items);
        // Item i cannot come out before position i - size + 1.
        out.forEach((item, pos) => expect(pos).toBeGreaterThanOrEqual(item - size));
      }),
    );
  });
});

describe("partition", () => {
  it("is disjoint, covering and balanced for any world size", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat(10_000), { maxLength: 300 }), fc.integer({ min: 1, max: 17 }), (raw, world) => {
        const remaining = [...raw].sort((a, b) => a - b);
        const parts = Array.from({ length: world }, (_, r) => partition(remaining, r, world));
        const all = parts.flat();
        expect(all.length).toBe(remaining.length);
        expect(new Set(all).size).toBe(remaining.length);
        expect([...all].sort((a, b) => a - b)).toEqual(remaining);
        const sizes = parts.map((x) => x.length);
        expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
        // Each rank keeps epoch order.
        for (const x of parts) expect([...x].sort((a, b) => a - b)).toEqual(x);
      }),
    );
  });

  it("with groups stays disjoint, covering, balanced and ordered, and splits few groups", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.nat(10_000), { maxLength: 400 }),
        fc.integer({ min: 1, max: 17 }),
        fc.integer({ min: 1, max: 40 }),
        (raw, world, groupSpan) => {
          const remaining = [...raw].sort((a, b) => a - b);
          // Groups of neighbouring positions, as GOP runs interleaved by the shuffle are.
          const groupOf = (p: number) => Math.floor(p / groupSpan);
          const parts = Array.from({ length: world }, (_, r) =>
            partition(remaining, r, world, { count: Math.floor(10_000 / groupSpan) + 1, of: groupOf }),
          );
          const all = parts.flat();
          expect([...all].sort((a, b) => a - b)).toEqual(remaining);
          const sizes = parts.map((x) => x.length);
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
          for (const x of parts) expect([...x].sort((a, b) => a - b)).toEqual(x);
          // A group is split only at the end of a rank's turn: at most one per turn, each turn about 8 groups.
          const owners = new Map<number, Set<number>>();
          parts.forEach((x, r) =>
            x.forEach((p) => owners.set(groupOf(p), (owners.get(groupOf(p)) ?? new Set()).add(r))),
          );
          const split = [...owners.values()].filter((o) => o.size > 1).length;
          const groups = owners.size;
          if (groups < remaining.length) expect(split).toBeLessThanOrEqual(Math.ceil(groups / 8) + world);
        },
      ),
    );
  });

  it("gives a GOP run's clips to one rank in the epoch order of the default shuffle", () => {
    const objs = Array.from({ length: 8 }, (_, i) => ({
      key: `v${i}.mp4`,
      etag: "e",
      starts: Array.from({ length: 56 }, (_, c) => c * 16),
      gops: Array.from({ length: 56 }, (_, c) => Math.floor((c * 16) / 300) * 300),
    }));
    const p = makePlan(objs, [{ objects: [0, 1, 2, 3] }, { objects: [4, 5, 6, 7] }], {
      frames: 16,
      stride: 1,
      align: "exact",
    });
    const order = epochOrder(p, "shard-buffer", { seed: 3, epoch: 0, buffer: 256 });
    const remaining = order.map((_, i) => i);
    const groups = gopGroups(p, (i) => order[i]!)!;
    const world = 4;
    const owners = new Map<number, Set<number>>();
    for (let r = 0; r < world; r++)
      for (const q of partition(remaining, r, world, groups))
        owners.set(groups.of(q), (owners.get(groups.of(q)) ?? new Set()).add(r));
    // 8 videos of 3 GOPs each (300-frame GOPs, 900 frames); round-robin would put every GOP on every rank.
    expect(owners.size).toBe(8 * 3);
    expect([...owners.values()].filter((o) => o.size > 1).length).toBeLessThanOrEqual(world);
    // Keyframe-aligned clips share no GOP: nothing to group, so ranks deal round-robin.
    expect(gopGroups(plan(4, 5, 2), (i) => order[i]!)).toBeUndefined();
  });
});

describe("GOP runs in the shard-buffer order", () => {
  it("gopsOf names the keyframe each start decodes from", () => {
    expect(gopsOf([0, 16, 32, 300, 316], [0, 300])).toEqual([0, 0, 0, 300, 300]);
    expect(gopsOf([5], [])).toEqual([0]);
  });

  it("gopsOf chains a GOP into the run of a clip that reaches into it, up to the run's frame bound", () => {
    const chain = { span: 16, frames: 300 };
    // 16…31 reaches GOP 30, 48…63 GOP 60; 64…79 ends before 90, so 96 opens a run of its own.
    expect(gopsOf([0, 16, 32, 48, 64, 96], [0, 30, 60, 90], chain)).toEqual([0, 0, 0, 0, 0, 90]);
    // A run opened 300 frames or more before a GOP does not take it in: 288…303 still reaches 300.
    expect(gopsOf([272, 288, 304], [0, 300], chain)).toEqual([0, 0, 300]);
    expect(gopsOf([16, 32], [0, 30], { span: 16, frames: 30 })).toEqual([0, 30]);
  });

  it("interleaveRuns keeps each run in order and deals from several at once", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer(),
        (lengths, width, seed) => {
          const runs = lengths.map((n, r) => Array.from({ length: n }, (_, i) => ({ r, i })));
          const out = interleaveRuns(runs, width, seededRng(seed >>> 0, 0, "t"));
          expect(out).toHaveLength(lengths.reduce((a, b) => a + b, 0));
          const at = new Map<number, number>();
          for (const { r, i } of out) {
            expect(i).toBe(at.get(r) ?? 0);
            at.set(r, i + 1);
          }
        },
      ),
    );
  });

  it("scatters clips of one GOP: 300-frame GOPs, 16-frame clips, batches of 8 mix GOPs", () => {
    // 4 videos of 3 GOPs each, 18 clips per GOP.
    const starts = Array.from({ length: 54 }, (_, c) => c * 16 + Math.floor(c / 18) * 12);
    const objs = Array.from({ length: 4 }, (_, i) => ({
      key: `v${i}`,
      etag: "e",
      starts,
      gops: gopsOf(starts, [0, 300, 600]),
    }));
    const p = makePlan(objs, [{ objects: [0, 1, 2, 3] }], { frames: 16, stride: 1, align: "exact" });
    const order = epochOrder(p, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 });
    expect(new Set(order.map(id)).size).toBe(p.total);
    const gop = (c: { object: number; start: number }) => `${c.object}:${Math.floor(c.start / 300)}`;
    let distinct = 0;
    for (let b = 0; b + 8 <= order.length; b += 8) {
      const n = new Set(order.slice(b, b + 8).map(gop)).size;
      expect(n).toBeGreaterThan(1);
      distinct += n;
    }
    expect(distinct / Math.floor(order.length / 8)).toBeGreaterThanOrEqual(4);
  });
});

describe("windows of listing pages in the shard-buffer order", () => {
  // 24 pages of 1000 objects (PAGE_OBJECTS), shards of 250 objects, one clip each.
  const pages = 24;
  const objs = Array.from({ length: pages * PAGE_OBJECTS }, (_, i) => ({ key: `v${i}`, etag: "e", starts: [0] }));
  const shards = Array.from({ length: pages * 4 }, (_, s) => ({
    objects: Array.from({ length: 250 }, (_, k) => s * 250 + k),
  }));
  const p = makePlan(objs, shards, { frames: 8, stride: 1, align: "keyframe" });
  const pageOf = (c: { object: number }) => Math.floor(c.object / PAGE_OBJECTS);

  it("groups each page's shards: a shard is in the page of its first object", () => {
    expect([...p.pageStarts]).toEqual(Array.from({ length: pages + 1 }, (_, k) => k * 4));
    expect([...pageStartsOf([{ objects: [0] }, { objects: [] }, { objects: [1000] }, { objects: [1999] }])]).toEqual([
      0, 2, 4,
    ]);
  });

  it("deals a window of PAGE_WINDOW permuted pages before the next, a group's windows together, beyond the buffer's reach", () => {
    const buffer = 64;
    const order = epochOrder(p, "shard-buffer", { seed: 5, epoch: 2, buffer });
    const windowSize = PAGE_WINDOW * PAGE_OBJECTS;
    // Each window's positions come mostly from PAGE_WINDOW pages (the buffer holds back a few
    // runs of earlier windows), and each page is in one window.
    const windowOf = new Map<number, number>();
    for (let w = 0; w < order.length; w += windowSize) {
      const counts = new Map<number, number>();
      for (const c of order.slice(w, w + windowSize)) counts.set(pageOf(c), (counts.get(pageOf(c)) ?? 0) + 1);
      const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, PAGE_WINDOW);
      expect(top.reduce((a, [, n]) => a + n, 0)).toBeGreaterThanOrEqual(0.9 * windowSize);
      for (const [page] of top) {
        expect(windowOf.has(page)).toBe(false);
        windowOf.set(page, w / windowSize);
      }
    }
    expect(windowOf.size).toBe(pages);
    // A group of PAGE_GROUP neighbouring pages fills windows that follow each other.
    const perGroup = PAGE_GROUP / PAGE_WINDOW;
    for (let g = 0; g < pages / PAGE_GROUP; g++) {
      const runs = new Set(
        Array.from({ length: PAGE_GROUP }, (_, i) => Math.floor(windowOf.get(g * PAGE_GROUP + i)! / perGroup)),
      );
      expect(runs.size).toBe(1);
    }
    // No clip comes out before its window by more than the buffer (and the interleaver's reach).
    order.forEach((c, q) =>
      expect(windowOf.get(pageOf(c))! * windowSize).toBeLessThanOrEqual(q + buffer + GOP_INTERLEAVE),
    );
    // The pages are permuted: the first window is not the listing's first pages.
    expect(
      [...windowOf]
        .filter(([, w]) => w === 0)
        .map(([page]) => page)
        .sort((a, b) => a - b),
    ).not.toEqual([0, 1, 2, 3]);
    expect(new Set(order.map(id)).size).toBe(p.total);
  });
});
