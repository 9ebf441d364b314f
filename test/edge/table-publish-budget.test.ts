import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { chooseChanges } from "../../common/dataset-table/budget.js";
import { compareKeys } from "../../common/dataset-table/entry.js";
import { tableKeys, tablePrefix } from "../../common/dataset-table/table-keys.js";
import type { TableEntryV1 } from "../../common/schema/index.js";
import { indexForTable, recordEntry } from "../../edge/table/index-object.js";
import {
  GENERATION_SUBREQUESTS,
  MAX_CHANGES_PER_GENERATION,
  MIN_GENERATION_SUBREQUESTS,
  publishTable,
  readHead,
  writeGeneration,
} from "../../edge/table/publish.js";
import { handleQueue, PUBLISH_OVERHEAD } from "../../edge/table/index-queue.js";
import { eventually, pagesOf, readTable } from "./table-helpers.js";

const entry = (root: string, i: number, etag = "e"): TableEntryV1 => ({
  key: `${root}/o-${String(i).padStart(5, "0")}.npy`,
  size: 100 + i,
  etag: `"${etag}${i}"`,
  kind: "array",
  frames: 1,
});

/** The environment with every R2 call counted: the bucket itself, not a stand-in. */
function counted(): { env: Env; calls: () => number } {
  let calls = 0;
  const bucket = new Proxy(env.BUCKET, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls++;
        return value.apply(target, args);
      };
    },
  });
  return { env: { ...env, BUCKET: bucket }, calls: () => calls };
}

describe("a generation within its subrequest budget", () => {
  it("publishes changes spread over every page in several generations, each within the budget", async () => {
    const root = "pbud";
    const pageTarget = 4;
    const budget = 24;
    // Generation 1: 64 objects (even numbers) in 16 pages of 4.
    const seeded = Array.from({ length: 64 }, (_, i) => entry(root, 2 * i));
    // In directory pages of 4 pages: a spread generation reads and rewrites the directory pages it takes too.
    const directoryTarget = 4;
    const first = await writeGeneration(
      env,
      root,
      undefined,
      new Map(seeded.map((e) => [e.key, e])),
      1000,
      pageTarget,
      {
        directoryTarget,
      },
    );
    expect(await pagesOf(first)).toHaveLength(16);
    const expected = new Map(seeded.map((e) => [e.key, e]));
    // Spread changes, recorded as the indexer records them: in every page one object changed and
    // one inserted, recorded in reverse key order; and one object removed (its mark carries no entry).
    for (let p = 15; p >= 0; p--) {
      const changed = entry(root, 8 * p + 2, "v2-");
      const inserted = entry(root, 8 * p + 5);
      for (const e of [changed, inserted]) {
        await recordEntry(env, root, e);
        expected.set(e.key, e);
      }
    }
    const gone = entry(root, 60);
    await env.BUCKET.put(await tableKeys.entry(root, gone.key), JSON.stringify(gone), {
      customMetadata: { etag: gone.etag },
    });
    expect((await indexForTable(env, gone.key)).outcome).toBe("removed");
    expected.delete(gone.key);

    const runs: { calls: number; subrequests: number; more: boolean }[] = [];
    for (let more = true; more; ) {
      const c = counted();
      const published = await publishTable(c.env, root, {
        subrequests: budget,
        pageTarget,
        directoryTarget,
        now: 2000 + runs.length,
      });
      // The sweep's last generation says more when it began past the first key; the next finds nothing.
      if (published === undefined) break;
      runs.push({ calls: c.calls(), subrequests: published.subrequests, more: published.more });
      more = published.more;
      expect(runs.length).toBeLessThan(20);
    }
    expect(runs.length).toBeGreaterThan(2);
    for (const run of runs) {
      expect(run.calls).toBeLessThanOrEqual(budget);
      expect(run.calls).toBeLessThanOrEqual(run.subrequests);
    }
    expect(await publishTable(env, root, { subrequests: budget, pageTarget })).toBeUndefined();

    const table = (await readTable(root))!;
    expect(table.head.generation).toBe(1 + runs.length);
    const keys = table.entries.map((e) => e.key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toEqual([...keys].sort(compareKeys));
    expect(new Map(table.entries.map((e) => [e.key, e]))).toEqual(expected);
    expect(table.head.objects).toBe(expected.size);
    expect(Math.max(...table.pages.map((p) => p.count))).toBeLessThanOrEqual(2 * pageTarget);
    const dirs = table.head.version === 2 ? table.head.directories : [];
    expect(dirs.length).toBeGreaterThan(1);
    expect(Math.max(...dirs.map((d) => d.pages))).toBeLessThanOrEqual(2 * directoryTarget);
  }, 30_000);

  it("sweeps on to the pages after the last generation's, while changes keep arriving in the first", async () => {
    const root = "psweep";
    const pageTarget = 4;
    const directoryTarget = 4;
    const seeded = Array.from({ length: 64 }, (_, i) => entry(root, 2 * i));
    await writeGeneration(env, root, undefined, new Map(seeded.map((e) => [e.key, e])), 1000, pageTarget, {
      directoryTarget,
    });
    // One change waits in each page of the second half (pages 8 to 15 hold objects 64 to 126).
    const back = Array.from({ length: 8 }, (_, p) => entry(root, 8 * (p + 8) + 2, "back-"));
    for (const e of back) await recordEntry(env, root, e);
    const pagesWritten: number[] = [];
    for (let g = 0; g < 20; g++) {
      // Spread arrivals: before every generation a change in each page of the first half.
      for (let p = 0; p < 8; p++) await recordEntry(env, root, entry(root, 8 * p, `front${g}-`));
      const before = await env.BUCKET.list({ prefix: `${tablePrefix(root)}pages/` });
      const published = await publishTable(env, root, { subrequests: 40, pageTarget, directoryTarget, now: 3000 + g });
      expect(published?.more).toBe(true);
      const after = await env.BUCKET.list({ prefix: `${tablePrefix(root)}pages/` });
      pagesWritten.push(after.objects.length - before.objects.length);
    }
    // A generation rewrites fewer pages than the first half holds: starting each at the first key
    // would take the first half's new changes for ever and never reach the second's.
    expect(Math.max(...pagesWritten)).toBeLessThan(2 * 8);
    const table = (await readTable(root))!;
    const published = new Map(table.entries.map((e) => [e.key, e]));
    for (const e of back) expect(published.get(e.key)).toEqual(e);
  }, 30_000);

  it("lists pending marks in key order, whatever their etags", async () => {
    const root = "pord";
    for (const i of [7, 3, 9, 1, 5]) await recordEntry(env, root, entry(root, i, `${10 - i}x`));
    const listed = await env.BUCKET.list({ prefix: tableKeys.pendingPrefix(root), include: ["customMetadata"] });
    const keys = listed.objects.map((o) => o.customMetadata?.key);
    expect(keys).toEqual([1, 3, 5, 7, 9].map((i) => entry(root, i).key));
  });

  it("takes a full generation's marks when R2 lists fewer than asked with their metadata", async () => {
    // R2 may answer a list that includes custom metadata with fewer objects than its limit (the
    // local R2 gives 100 of 1000): the generation lists on until it has its marks.
    const root = "pshort";
    const n = 1200;
    expect(n).toBeLessThan(MAX_CHANGES_PER_GENERATION);
    for (let i = 0; i < n; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, n - i) }, (_, k) => recordEntry(env, root, entry(root, i + k))),
      );
    const c = counted();
    const published = (await publishTable(c.env, root, { now: 1000 }))!;
    expect(published.changes).toBe(n);
    expect(published.objects).toBe(n);
    expect(published.more).toBe(false);
    expect(c.calls()).toBeLessThanOrEqual(published.subrequests);
    expect(published.subrequests).toBeLessThanOrEqual(GENERATION_SUBREQUESTS);
    expect(await publishTable(env, root)).toBeUndefined();
  }, 120_000);

  it("refuses a budget too small to take one change", async () => {
    await expect(publishTable(env, "pbad", { subrequests: MIN_GENERATION_SUBREQUESTS - 1 })).rejects.toThrow(
      `Expected a subrequest budget of at least ${MIN_GENERATION_SUBREQUESTS} but received ${MIN_GENERATION_SUBREQUESTS - 1}`,
    );
    expect(await readHead(env, "pbad")).toBeUndefined();
  });
});

describe("the publish queue's handler within one invocation's budget", () => {
  it("publishes a root once per batch and sends the roots that do not fit again", async () => {
    for (const root of ["pqa", "pqb"]) await recordEntry(env, root, entry(root, 1));
    const batch = createMessageBatch(
      "ec-publish",
      ["pqa", "pqa", "pqb"].map((root, i) => ({
        id: `p${i}`,
        timestamp: new Date(),
        attempts: 1,
        body: { type: "publish", root },
      })),
    );
    const retries = batch.messages.map((m) => vi.spyOn(m, "retry"));
    const resent = vi.spyOn(env.PUBLISH_QUEUE, "sendBatch");
    const ctx = createExecutionContext();
    // Room for one publish message with its overhead, not two.
    await handleQueue(batch, env, {
      index: indexForTable,
      budget: 1 + PUBLISH_OVERHEAD + MIN_GENERATION_SUBREQUESTS + 5,
    });
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(["p0", "p1", "p2"]);
    expect(retries.flatMap((r) => r.mock.calls)).toEqual([]);
    expect((await readHead(env, "pqa"))!.head.generation).toBe(1);
    expect(resent.mock.calls).toEqual([[[{ body: { type: "publish", root: "pqb" } }]]]);
    resent.mockRestore();
    // The real queue delivers the message sent again for pqb, and its consumer publishes it.
    const pqb = await eventually(() => readHead(env, "pqb"), "a generation of pqb");
    expect(pqb.head.objects).toBe(1);
  });
});

describe("chooseChanges", () => {
  const ref = (first: string, count: number) => ({ name: first, first, last: first, count, bytes: 0, sha256: "" });
  const pages = Array.from({ length: 10 }, (_, p) => ref(`k${p}`, 1000));

  it("takes whole pages in key order until the budget, the last in part", () => {
    // Three changes in each of ten pages: 1 read + 1 write per page.
    const pending = pages.flatMap((p) => ["a", "b", "c"].map((s) => ({ key: `${p.first}${s}`, read: false })));
    const chosen = chooseChanges(pages, pending.reverse(), 7);
    expect(chosen.keys).toEqual(["k0a", "k0b", "k0c", "k1a", "k1b", "k1c", "k2a", "k2b", "k2c"]);
    expect(chosen.subrequests).toBe(6);
  });

  it("counts a get per change its mark does not carry, and the pages a split writes", () => {
    const full = [ref("k0", 2000)];
    // 2000 + 1 entries split into 3 pages: 1 read + 3 writes, then one get per uncarried change.
    const chosen = chooseChanges(
      full,
      [
        { key: "k0a", read: true },
        { key: "k0b", read: false },
        { key: "k0c", read: true },
      ],
      5,
    );
    expect(chosen).toEqual({ keys: ["k0a", "k0b"], subrequests: 5 });
  });

  it("costs no read in a new table, and one page per target entries written", () => {
    const pending = Array.from({ length: 2500 }, (_, i) => ({ key: `n${String(i).padStart(4, "0")}`, read: false }));
    expect(chooseChanges([], pending, 2)).toEqual({ keys: pending.slice(0, 2000).map((c) => c.key), subrequests: 2 });
  });
});
