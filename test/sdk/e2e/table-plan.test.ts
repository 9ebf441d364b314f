import { appendFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchTable } from "../../../common/table-client.js";
import { ensureDevVars } from "../../../sdk/dev/dev-vars.js";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { mergeCheckpoints, open, type OpenOptions } from "../../../sdk/index.js";
import { inProcessCache } from "../../../sdk/source/cache-client.js";
import { EdgeSource } from "../../../sdk/source/edge-source.js";
import type { DatasetObject } from "../../../sdk/source/source.js";
import { main as indexCli } from "../../../sdk/cli/index-prefix.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { makeImage, makeNpy, makeVideo } from "../../helpers/make-video.js";
import { seedLocalR2 } from "../../helpers/seed-r2.js";

/** Objects of late/: more than one listing page, so ec index pages. */
const LATE = 1001;

let dir: string;
let edge: LocalEdge;
let dataset: string;
let video: Uint8Array<ArrayBuffer>;

async function put(key: string, body: Uint8Array<ArrayBuffer>): Promise<void> {
  const res = await fetch(`${edge.url}/v1/objects/${key}`, {
    method: "PUT",
    body,
    headers: { authorization: `Bearer ${edge.token}` },
  });
  expect(res.status).toBe(201);
}

/** Waits for the real queue to publish a generation of `tp` that lists `count` objects. */
async function tableWith(count: number): Promise<number> {
  const until = Date.now() + 60_000;
  for (;;) {
    const table = await fetchTable(dataset, { token: edge.token });
    if (table && table.entries.length === count) return table.head.generation;
    if (Date.now() > until)
      throw new Error(`no generation with ${count} objects (have ${table?.entries.length ?? "no table"})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** An edge source that counts index reads; `table: false` plans from every index instead. */
class CountingSource extends EdgeSource {
  indexReads = 0;
  override index(object: DatasetObject) {
    this.indexReads++;
    return super.index(object);
  }
}

async function source(table: boolean): Promise<CountingSource> {
  return new CountingSource(dataset, edge.token, await inProcessCache(edge.url, 16 << 20), { table });
}

/** The clips a run delivers ("key@start" in order), its checkpoint, and the source's index reads. */
async function run(table: boolean, options: OpenOptions, stopAfter = Infinity) {
  const src = await source(table);
  const ds = await open(
    dataset,
    { token: edge.token, device: "cpu", frames: 4, batch: 2, ...options },
    { source: src },
  );
  const readsAtOpen = src.indexReads;
  const ids: string[] = [];
  let batches = 0;
  for await (const b of ds) {
    ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    if (++batches >= stopAfter) break;
  }
  await ds.close();
  return { ids, state: ds.state(), generation: ds.generation, readsAtOpen, stats: ds.stats(), total: ds.totalClips };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-table-plan-"));
  ensureDevVars(dir);
  // Generations follow uploads within a second instead of the deployed 10 s debounce.
  appendFileSync(join(dir, ".dev.vars"), 'EC_PUBLISH_DELAY_SECONDS="1"\n');
  video = new Uint8Array(
    await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 36, gop: 6, bframes: 2 })),
  );
  const other = new Uint8Array(
    await readFile(await makeVideo(dir, { codec: "hevc", width: 64, height: 48, frames: 24, gop: 8, name: "b.mp4" })),
  );
  const image = new Uint8Array(await readFile(await makeImage(dir, { format: "png", width: 32, height: 24 })));
  const npy = new Uint8Array(await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 3] })));
  // Stored behind the edge's back (no PUT, no queue message), as in a bucket filled before ec: no table.
  await seedLocalR2(
    join(dir, "r2"),
    Array.from({ length: LATE }, (_, i) => ({
      key: `late/${String(i).padStart(4, "0")}.${i % 50 ? "npy" : "mp4"}`,
      body: i % 50 ? npy : video,
    })),
  );
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  edge = await started;
  dataset = `${edge.url}/v1/datasets/tp`;
  for (let i = 0; i < 6; i++) await put(`tp/v${i}.mp4`, i % 2 ? other : video);
  await put("tp/sub/i.png", image);
  await put("tp/broken.mp4", video.slice(0, 3000));
  await tableWith(8);
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("planning from the dataset table (a local edge, its real queue)", () => {
  it("gives exactly the epoch order, partition and resume that planning from every index gives", async () => {
    for (const options of [
      { seed: 3 },
      { seed: 3, rank: 1, world: 2 },
      { seed: 9, align: "exact" as const, stride: 2 },
      { shuffle: "global", seed: 1, rank: 0, world: 3 },
    ]) {
      const fromTable = await run(true, options);
      const fromIndexes = await run(false, options);
      expect(fromTable.generation).toBeGreaterThan(0);
      expect(fromIndexes.generation).toBeUndefined();
      expect(fromTable.ids.length).toBeGreaterThan(0);
      expect(fromTable.ids).toEqual(fromIndexes.ids);
      expect(fromTable.total).toBe(fromIndexes.total);
      expect(fromTable.state.fingerprint).toBe(fromIndexes.state.fingerprint);
      expect(fromTable.stats.errors).toEqual(fromIndexes.stats.errors);
      // The corrupt object is an error entry of the table: reported, skipped, and the rest streams.
      expect(fromTable.stats.errors).toEqual({ ERR_TRUNCATED: 1 });
    }
    // A checkpoint of either resumes the same rest in both.
    const partial = await run(true, { seed: 5 }, 2);
    const rest = await run(true, { resume: partial.state });
    expect((await run(false, { resume: partial.state })).ids).toEqual(rest.ids);
    expect([...partial.ids, ...rest.ids].sort()).toEqual((await run(false, { seed: 5 })).ids.sort());
  });

  it("reads no index at open; each object's index is read only ahead of its first clip", async () => {
    const table = await run(true, { seed: 2, limit: 1, prefetch: 1 });
    const indexes = await run(false, { seed: 2, limit: 1, prefetch: 1 });
    expect(table.readsAtOpen).toBe(0);
    expect(indexes.readsAtOpen).toBe(8);
    expect(table.stats.first_batch_s).toBeGreaterThan(0);
  });

  it("resumes a checkpoint of one generation exactly after new uploads, which the next run sees", async () => {
    const all = await run(true, { seed: 7 });
    const partial = await run(true, { seed: 7 }, 3);
    expect(partial.state.generation).toBe(all.generation);
    await put("tp/new-1.mp4", video);
    await put("tp/a-new.mp4", video);
    const next = await tableWith(10);
    expect(next).toBeGreaterThan(all.generation!);
    const ranks = await Promise.all(
      [0, 1].map((rank) => run(true, { rank, world: 2, resume: mergeCheckpoints([partial.state]) })),
    );
    for (const r of ranks) expect(r.generation).toBe(all.generation);
    expect([...partial.ids, ...ranks.flatMap((r) => r.ids)].sort()).toEqual([...all.ids].sort());
    const fresh = await run(true, { seed: 7 });
    expect(fresh.generation).toBe(next);
    expect(fresh.ids.filter((id) => id.includes("new")).length).toBeGreaterThan(0);
  });

  it("falls back to every index where a prefix has no table and says so once; ec index then builds its table", async () => {
    const late = `${edge.url}/v1/datasets/late`;
    const warnings: (Error & { code?: string })[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on("warning", listen);
    let before;
    try {
      const ds = await open(late, { token: edge.token, device: "cpu", frames: 4, seed: 1 });
      expect(ds.generation).toBeUndefined();
      before = [];
      for await (const b of ds) before.push(...b.clips.map((c) => `${c.key}@${c.start}`));
      await ds.close();
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", listen);
    }
    expect(warnings.map((w) => w.code)).toEqual(["ERR_TABLE_MISSING"]);
    expect(before.length).toBeGreaterThan(0);

    const { code, out } = await captureOutput(() => indexCli([late, "--token", edge.token, "--json"]));
    expect(code).toBe(0);
    expect(JSON.parse(out.trim())).toMatchObject({ enqueued: LATE, pages: 2 });
    const until = Date.now() + 90_000;
    while ((await fetchTable(late, { token: edge.token }))?.entries.length !== LATE) {
      if (Date.now() > until) throw new Error("ec index: the table of late/ never listed every object");
      await new Promise((r) => setTimeout(r, 250));
    }
    const after = await open(late, { token: edge.token, device: "cpu", frames: 4, seed: 1 });
    expect(after.generation).toBeGreaterThan(0);
    const ids: string[] = [];
    for await (const b of after) ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    await after.close();
    expect(ids).toEqual(before);
  }, 300_000);
});
