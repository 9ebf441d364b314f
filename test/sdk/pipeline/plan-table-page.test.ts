import { describe, expect, it } from "vitest";
import { EntryColumns } from "../../../common/dataset-table/entry-columns.js";
import { decodePageBytes, encodePageBytes } from "../../../common/dataset-table/page-codec.js";
import { pageShards } from "../../../common/page-shards.js";
import type { TableEntryV1 } from "../../../common/schema/index.js";
import { resolveOptions } from "../../../sdk/options.js";
import type { IndexCache } from "../../../sdk/pipeline/index-cache.js";
import { planDataset, planTablePage, type SkippedObject } from "../../../sdk/pipeline/planner.js";
import { PAGE_OBJECTS } from "../../../sdk/sampler/clip-plan.js";
import { LazyPlan, PageWait } from "../../../sdk/sampler/paged-plan.js";
import { epochOrder, pagedStream } from "../../../sdk/sampler/shuffle.js";
import type { DatasetListing } from "../../../sdk/source/source.js";

/** Videos of 40–90 frames with a keyframe every 10 or 30, every 97th corrupt. */
function entry(i: number): TableEntryV1 {
  const key = `scale/o-${String(i).padStart(6, "0")}.mp4`;
  if (i % 97 === 5)
    return { key, size: 10, etag: `"e${i}"`, kind: "error", error: { code: "ERR_INDEX_CORRUPT", message: "bad" } };
  const frames = 40 + (i % 6) * 10;
  const every = i % 2 ? 10 : 30;
  const keyframes = Array.from({ length: Math.ceil(frames / every) }, (_, k) => k * every);
  return {
    key,
    size: 3_000_000 + (i % 13) * 1_000_000,
    etag: `"e${i}"`,
    kind: "video",
    frames,
    keyframes,
    codec: "h264",
    width: 64,
    height: 48,
  };
}

describe("a table page planned on its own", () => {
  const options = resolveOptions({ frames: 8, align: "exact" }, {});
  const shardBytes = 32_000_000;
  const pages = 3;
  const rows = Array.from({ length: pages }, (_, k) =>
    Array.from({ length: PAGE_OBJECTS }, (_, j) => entry(k * PAGE_OBJECTS + j)),
  );

  it("plans its objects as planDataset plans the whole table, and cuts its shards by the page-local rule", async () => {
    const all = EntryColumns.from(rows.flat());
    const shards = rows.flatMap((r, k) =>
      pageShards({ length: r.length, key: (j) => r[j]!.key, size: (j) => r[j]!.size }, shardBytes).map((s) => ({
        objects: Array.from({ length: s.count }, (_, i) => k * PAGE_OBJECTS + s.first + i),
      })),
    );
    const listing: DatasetListing = { objects: all, shards, entries: all };
    const whole = await planDataset(listing, {} as IndexCache, options);
    const skipped: SkippedObject[] = [];
    const lazy = new LazyPlan(
      rows.map((r) => r.length),
      async (k) => planTablePage(EntryColumns.from(rows[k]!), k * PAGE_OBJECTS, options, shardBytes, skipped),
    );
    await lazy.load([0, 1, 2]);
    for (let id = 0; id < all.length; id += 7) {
      expect(lazy.object(id).starts).toEqual(whole.plan.objects[id]!.starts);
      expect(lazy.object(id).gops).toEqual(whole.plan.objects[id]!.gops);
      expect(lazy.object(id).key).toBe(all.key(id));
    }
    expect(skipped.filter(Boolean).map((s) => s.key)).toEqual(whole.skipped.map((s) => s.key));
    // The order over the pages read lazily is the whole table's.
    const params = { seed: 3, epoch: 0, buffer: 64 };
    const order: unknown[] = [];
    const it = pagedStream(lazy, "shard-buffer", params)![Symbol.iterator]();
    for (let next = it.next(); !next.done; next = it.next()) {
      if (next.value instanceof PageWait) await next.value.until;
      else order.push(next.value);
    }
    expect(order).toEqual(epochOrder(whole.plan, "shard-buffer", params));
  });

  it("plans an object when it is first asked for, and reports those without clips as the page is planned", () => {
    const entries = EntryColumns.from(rows[0]!);
    // Each planned row reads its frames once (rows alike share the row planned before them).
    let read = 0;
    const frames = entries.frames.bind(entries);
    entries.frames = (i: number) => (read++, frames(i));
    const skipped: SkippedObject[] = [];
    const page = planTablePage(entries, 0, options, shardBytes, skipped);
    const broken = rows[0]!.filter((e) => e.kind === "error").map((e) => e.key);
    expect(broken.length).toBeGreaterThan(0);
    expect(skipped.filter(Boolean).map((s) => s.key)).toEqual(broken);
    expect(read).toBe(broken.length);
    expect(page.shards.flatMap((shard) => [...shard])).toEqual(Array.from({ length: PAGE_OBJECTS }, (_, i) => i));
    const one = page.objects.at(10)!;
    expect(read).toBe(broken.length + 1);
    expect(page.objects.at(10)).toBe(one);
    expect(read).toBe(broken.length + 1);
  });
});

describe("table pages that store their shards (page format 4)", () => {
  const options = resolveOptions({ frames: 8, align: "exact" }, {});
  const shardBytes = 32_000_000;
  const pages = 10;
  const rows = Array.from({ length: pages }, (_, k) => Array.from({ length: 300 }, (_, j) => entry(k * 300 + j)));
  /** Each page through the codec, with its shards stored (format 4) or not (format 3). */
  const decoded = (sharded: boolean) =>
    rows.map((r) => decodePageBytes(encodePageBytes("scale", r, sharded ? { shardBytes } : {})).entries);
  const lazyOf = (entries: EntryColumns[], skipped: SkippedObject[] = []) =>
    new LazyPlan(
      rows.map((r) => r.length),
      async (k) => planTablePage(entries[k]!, k * PAGE_OBJECTS, options, shardBytes, skipped),
    );
  /** The first `n` items of an order (every item where n is Infinity), waiting where it waits. */
  async function take(order: Iterable<unknown>, n = Infinity) {
    const out: unknown[] = [];
    const it = order[Symbol.iterator]();
    for (let next = it.next(); !next.done && out.length < n; next = it.next()) {
      if (next.value instanceof PageWait) await next.value.until;
      else out.push(next.value);
    }
    return out;
  }

  it("give the same epoch order, clip for clip, as the same table in format 3", async () => {
    expect(decoded(true).every((e) => e.shardStarts(shardBytes) !== undefined)).toBe(true);
    for (const name of ["shard-buffer", "none"])
      for (const seed of [1, 7]) {
        const params = { seed, epoch: 2, buffer: 32 };
        const skipped3: SkippedObject[] = [];
        const skipped4: SkippedObject[] = [];
        const old = await take(pagedStream(lazyOf(decoded(false), skipped3), name, params)!);
        const stored = await take(pagedStream(lazyOf(decoded(true), skipped4), name, params)!);
        expect(old.length).toBeGreaterThan(1000);
        expect(stored).toEqual(old);
        expect(skipped4.filter(Boolean).map((x) => x.key)).toEqual(skipped3.filter(Boolean).map((x) => x.key));
      }
  });

  it("are cut into shards without hashing a key, and a first batch decodes only the shards it reaches", async () => {
    const sharded = decoded(true);
    const plan = lazyOf(sharded);
    await take(pagedStream(plan, "shard-buffer", { seed: 3, epoch: 0, buffer: 16 })!, 8);
    const read = plan.asked.map((k) => sharded[k]!);
    expect(read.length).toBeGreaterThan(1);
    const held = read.reduce((n, e) => n + e.length, 0);
    const done = read.reduce((n, e) => n + e.decoded, 0);
    // The buffer's 16 GOP runs and the clips dealt: a few shards of each page, not its 300 entries.
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(held / 4);
    // Format 3: every entry of a page read is decoded (and each key hashed) before its first clip.
    const whole = decoded(false);
    const before = lazyOf(whole);
    await take(pagedStream(before, "shard-buffer", { seed: 3, epoch: 0, buffer: 16 })!, 8);
    expect(before.asked.reduce((n, k) => n + whole[k]!.decoded, 0)).toBe(before.asked.length * 300);
  });
});
