import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { buildGeneration } from "../../../common/dataset-table/generation.js";
import { tableKeys } from "../../../common/dataset-table/table-keys.js";
import type { LazyTable } from "../../../common/lazy-table.js";
import { manifestSigner, signJson } from "../../../common/manifest-sign.js";
import { buildIndex, bytesReader, encodeIndex } from "../../../common/media-index/index.js";
import type { IndexV1, TableEntryV1 } from "../../../common/schema/index.js";
import { ensureDevVars } from "../../../sdk/dev/dev-vars.js";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { type Checkpoint, mergeCheckpoints, open, type OpenOptions, type SdkError } from "../../../sdk/index.js";
import { GROUPS_PER_TURN } from "../../../sdk/sampler/partition.js";
import { GOP_INTERLEAVE, PAGE_WINDOW } from "../../../sdk/sampler/shuffle.js";
import { TURN_SAMPLE_RUNS } from "../../../sdk/sampler/streamed-gop-clips.js";
import { inProcessCache } from "../../../sdk/source/cache-client.js";
import { EdgeSource } from "../../../sdk/source/edge-source.js";
import { makeVideo } from "../../helpers/make-video.js";
import { type SeedObject, seedLocalR2 } from "../../helpers/seed-r2.js";

/** Objects of the dataset: 4 to a table page, so 12 pages, three windows of the order. */
const OBJECTS = 48;
/** The one object whose bytes are no video (its entry is an error): reported when its page is planned. */
const BROKEN = 21;

/** Objects (and pages) of the table of many pages. */
const MANY = 40;

/** Objects (and pages) of the table several ranks stream: more than the deal's lookahead holds. */
const RANKS_MANY = 160;

let dir: string;
let edge: LocalEdge;
let dataset: string;

/** Objects, their indexes and one table generation of pages of 4 entries (directory pages of 2 pages), straight into the local R2. */
async function seed(
  r2: string,
  manifestKey: string,
  video: Uint8Array,
  root = "lz",
  objects = OBJECTS,
  pageTarget = 4,
): Promise<void> {
  const items: SeedObject[] = [];
  const entries: TableEntryV1[] = [];
  for (let i = 0; i < objects; i++) {
    const key = `${root}/v${String(i).padStart(3, "0")}.mp4`;
    // A unique object each: the video plus a trailing `free` box with its number.
    const bytes = new Uint8Array(video.length + 16);
    bytes.set(video);
    new DataView(bytes.buffer, video.length).setUint32(0, 16);
    bytes.set(new TextEncoder().encode("free"), video.length + 4);
    new DataView(bytes.buffer, video.length).setUint32(12, i);
    const body = i === BROKEN && root === "lz" ? bytes.slice(0, 3000) : bytes;
    const md5 = createHash("md5").update(body).digest("hex");
    const index: IndexV1 = await buildIndex(bytesReader(body), { key, etag: `"${md5}"` });
    entries.push(tableEntry(index));
    items.push({ key, body });
    items.push({
      key: `_ec/index/v1/${md5}/${key}`,
      body: encodeIndex(index),
      httpMetadata: { contentType: "application/vnd.ec.index.v1" },
      customMetadata: { kind: index.kind, key },
    });
  }
  const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root,
    shardBytes: 3 * video.length,
    now: Math.floor(Date.now() / 1000),
    pinsApart: true,
    pageTarget,
    directoryTarget: 2,
  });
  const body = JSON.stringify(await signJson(head, await manifestSigner(manifestKey)));
  const gz = { contentType: "application/octet-stream", contentEncoding: "gzip" };
  for (const p of pages) {
    items.push({ key: tableKeys.page(root, p.name), body: p.gz, httpMetadata: gz });
    if (p.pins) items.push({ key: tableKeys.pins(root, p.name), body: p.pins, httpMetadata: gz });
  }
  items.push({ key: tableKeys.generation(root, head.generation), body }, { key: tableKeys.head(root), body });
  await seedLocalR2(r2, items);
}

/** An edge source that keeps the table it read lazily, to count what it read. */
class LazySource extends EdgeSource {
  table: LazyTable | undefined;
  override async listLazy(o?: { generation?: number | undefined }) {
    this.table = await super.listLazy(o);
    return this.table;
  }
}

async function source(url: string): Promise<LazySource> {
  return new LazySource(url, edge.token, await inProcessCache(edge.url, 16 << 20));
}

/** The clips a run delivers ("key@start"), its checkpoint, what it reported, and its source. */
async function run(lazy: boolean | undefined, options: OpenOptions, stopAfter = Infinity, url = dataset) {
  const src = await source(url);
  const errors: SdkError[] = [];
  const ds = await open(
    url,
    { token: edge.token, device: "cpu", frames: 4, batch: 2, seed: 3, onError: (e) => errors.push(e), ...options },
    { source: src, ...(lazy === undefined ? {} : { lazy }) },
  );
  const atOpen = { requests: src.table?.requests, pages: src.table?.read.length };
  const ids: string[] = [];
  let batches = 0;
  let first: { requests: number | undefined; pages: number[] } | undefined;
  for await (const b of ds) {
    ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    first ??= { requests: src.table?.requests, pages: [...(src.table?.read ?? [])] };
    if (++batches >= stopAfter) break;
  }
  await ds.close();
  return { ids, state: ds.state(), atOpen, first, errors, ds, table: src.table };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-lazy-open-"));
  const vars = ensureDevVars(dir);
  const video = new Uint8Array(
    await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6 })),
  );
  await seed(join(dir, "r2"), vars.EC_MANIFEST_KEY, video);
  // A table of 2 pages, within one window: read whole.
  await seed(join(dir, "r2"), vars.EC_MANIFEST_KEY, video, "lq", 8);
  // One object to a page: a table of many pages for a small page bound.
  await seed(join(dir, "r2"), vars.EC_MANIFEST_KEY, video, "lm", MANY, 1);
  await seed(join(dir, "r2"), vars.EC_MANIFEST_KEY, video, "lr", RANKS_MANY, 1);
  edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  dataset = `${edge.url}/v1/datasets/lz`;
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("open() over table pages read lazily (a local edge)", () => {
  let eager: string[];

  beforeAll(async () => {
    eager = (await run(false, {})).ids;
  }, 120_000);

  it("reads the head and directory pages at open, the first window's pages for the first batch, and every clip once", async () => {
    // Two clips in flight and a buffer of 8 GOP runs: the pipeline's read-ahead (4 × prefetch clips hinted) and the
    // order's buffer stay inside the first window (both bounded, whatever the dataset's size).
    const lazy = await run(true, { prefetch: 2, shuffleBuffer: 8 });
    expect(lazy.table).toBeDefined();
    expect(lazy.table!.pageCount).toBe(12);
    // The head and the directory pages at the prefix's edges: no page.
    expect(lazy.atOpen.pages).toBe(0);
    expect(lazy.atOpen.requests).toBeLessThanOrEqual(3);
    // The first batch: the first window's pages at most (the next one's only fetched ahead, not read), never all 12.
    expect(lazy.first!.pages.length).toBeLessThanOrEqual(PAGE_WINDOW);
    expect(new Set(lazy.first!.pages).size).toBe(lazy.first!.pages.length);
    // The whole epoch: every clip the eager plan has, each once.
    expect(lazy.ids.length).toBe(eager.length);
    expect([...lazy.ids].sort()).toEqual([...eager].sort());
    expect(lazy.ds.totalClips).toBe(Infinity);
    // The broken object, reported when its page was planned.
    expect(lazy.ds.skipped.map((s) => s.key)).toEqual([`lz/v0${BROKEN}.mp4`]);
    expect(lazy.errors.map((e) => e.message)).toEqual([expect.stringContaining(`lz/v0${BROKEN}.mp4`)]);
  }, 120_000);

  it("deals 2 ranks disjoint shares that resume from merged checkpoints to every clip exactly once", async () => {
    const first = await Promise.all([0, 1].map((rank) => run(true, { rank, world: 2 }, 3)));
    const merged: Checkpoint = mergeCheckpoints(first.map((r) => r.state));
    expect(merged.total).toBeUndefined();
    const rest = await Promise.all([0, 1].map((rank) => run(true, { rank, world: 2, resume: merged })));
    const all = [...first, ...rest].flatMap((r) => r.ids);
    expect(new Set(first[0]!.ids).size + new Set(first[1]!.ids).size).toBe(
      new Set([...first[0]!.ids, ...first[1]!.ids]).size,
    );
    expect(all.length).toBe(eager.length);
    expect([...all].sort()).toEqual([...eager].sort());
  }, 240_000);

  it("resumes one rank alone after k batches to exactly the clips it had left", async () => {
    const whole = await run(true, {});
    const part = await run(true, {}, 4);
    const rest = await run(true, { resume: part.state });
    expect([...part.ids, ...rest.ids]).toEqual(whole.ids);
  }, 240_000);

  it("keeps a bounded number of pages over a whole epoch of many pages, every clip once, and resumes", async () => {
    const url = `${edge.url}/v1/datasets/lm`;
    const small = { prefetch: 1, batch: 2, shuffleBuffer: 2 };
    // Pages kept at once, at most: the order's window and the one read ahead, a page for each GOP
    // run in the shuffle's buffer and interleave, and one for each clip the pipeline may hold
    // unsettled (hinted 4 × prefetch ahead, prefetch in flight, a batch being filled).
    const bound = 2 * PAGE_WINDOW + small.shuffleBuffer + GOP_INTERLEAVE + 5 * small.prefetch + small.batch;
    expect(bound).toBeLessThan(MANY);
    for (const shuffle of ["shard-buffer", false] as const) {
      const eagerRun = await run(false, { ...small, shuffle }, Infinity, url);
      const whole = await run(true, { ...small, shuffle }, Infinity, url);
      expect(whole.table!.pageCount).toBe(MANY);
      expect(whole.table!.peakPages).toBeLessThanOrEqual(bound);
      // Every page went once its clips settled, and none was read twice.
      expect(whole.table!.keptPages.length).toBeLessThanOrEqual(2 * PAGE_WINDOW);
      expect(new Set(whole.table!.read).size).toBe(MANY);
      expect(whole.table!.read.length).toBe(MANY);
      expect(whole.ids.length).toBe(MANY * 6);
      expect([...whole.ids].sort()).toEqual([...eagerRun.ids].sort());
      const part = await run(true, { ...small, shuffle }, 7, url);
      const rest = await run(true, { ...small, shuffle, resume: part.state }, Infinity, url);
      expect([...part.ids, ...rest.ids]).toEqual(whole.ids);
      expect(rest.table!.peakPages).toBeLessThanOrEqual(bound);
    }
  }, 240_000);

  it("holds table pages and directory pages within tableCacheBytes over a whole epoch, every clip once, and resumes", async () => {
    const url = `${edge.url}/v1/datasets/lm`;
    const small = { prefetch: 1, batch: 2, shuffleBuffer: 2 };
    const free = await run(true, small, Infinity, url);
    // The least cap: a window of pages and a directory page, far under what the epoch reads (40 pages, 20 directory pages).
    const cap = free.table!.cache.least;
    const held = free.ds.stats().table_cache!;
    expect(held.peak_directory_bytes).toBeGreaterThan(cap);
    expect(held.evicted_pages + held.evicted_directory_pages).toBe(0);
    // The bytes held after every batch, and at every admission (the peaks), stay within the cap.
    const capped = async (stopAfter: number, resume?: Checkpoint) => {
      const src = await source(url);
      const ds = await open(
        url,
        {
          token: edge.token,
          device: "cpu",
          frames: 4,
          seed: 3,
          ...small,
          tableCacheBytes: cap,
          ...(resume ? { resume } : {}),
        },
        { source: src, lazy: true },
      );
      const ids: string[] = [];
      let batches = 0;
      for await (const b of ds) {
        ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
        const now = ds.stats().table_cache!;
        expect(now.bytes).toBeLessThanOrEqual(cap);
        expect(now.page_bytes + now.directory_bytes).toBe(now.bytes);
        if (++batches >= stopAfter) break;
      }
      await ds.close();
      return { ids, state: ds.state(), stats: ds.stats().table_cache! };
    };
    const whole = await capped(Infinity);
    expect(whole.stats.cap).toBe(cap);
    expect(whole.stats.peak_bytes).toBeLessThanOrEqual(cap);
    expect(whole.stats.peak_page_bytes).toBeGreaterThan(0);
    expect(whole.stats.peak_directory_bytes).toBeGreaterThan(0);
    // Both kinds were dropped under the cap and read (and checked) again when needed.
    expect(whole.stats.evicted_pages).toBeGreaterThan(0);
    expect(whole.stats.evicted_directory_pages).toBeGreaterThan(0);
    expect(whole.stats.reread_directory_pages).toBeGreaterThan(0);
    expect(whole.stats.reread_pages).toBeGreaterThan(0);
    // The same epoch as without a cap: every clip once, in the same order.
    expect(whole.ids).toEqual(free.ids);
    expect(new Set(whole.ids).size).toBe(MANY * 6);
    const part = await capped(7);
    const rest = await capped(Infinity, part.state);
    expect([...part.ids, ...rest.ids]).toEqual(whole.ids);
    expect(rest.stats.peak_bytes).toBeLessThanOrEqual(cap);
  }, 240_000);

  it("refuses a tableCacheBytes that cannot hold a window of pages, naming the option", async () => {
    const url = `${edge.url}/v1/datasets/lm`;
    await expect(run(true, { tableCacheBytes: 64 }, Infinity, url)).rejects.toMatchObject({
      code: "ERR_TABLE_CACHE_TOO_SMALL",
      message: expect.stringContaining("raise tableCacheBytes"),
    });
  }, 120_000);
  it("keeps a bounded number of pages on each of 4 ranks over a whole epoch and a resume late in it", async () => {
    const url = `${edge.url}/v1/datasets/lr`;
    const small = { prefetch: 1, batch: 2, shuffleBuffer: 2 };
    const world = 4;
    // GOP runs of 2, 1, 2, 1 clips (4-frame clips over 6-frame GOPs): a turn of 8 runs is 12 clips.
    const turn = Math.round(GROUPS_PER_TURN * 1.5);
    // One rank's bound (as above), and a page for each clip the deal holds undecided: the first
    // TURN_SAMPLE_RUNS runs at the epoch's start, a round of every rank's turn after.
    const bound =
      2 * PAGE_WINDOW +
      small.shuffleBuffer +
      GOP_INTERLEAVE +
      5 * small.prefetch +
      small.batch +
      Math.max(TURN_SAMPLE_RUNS, world * turn);
    expect(bound).toBeLessThan(RANKS_MANY * 0.6);
    const ranks = (o: OpenOptions, stopAfter = Infinity) =>
      Promise.all(
        Array.from({ length: world }, (_, rank) => run(true, { ...small, ...o, rank, world }, stopAfter, url)),
      );
    const whole = await ranks({});
    for (const r of whole) expect(r.table!.peakPages).toBeLessThanOrEqual(bound);
    const all = whole.flatMap((r) => r.ids);
    expect(all.length).toBe(RANKS_MANY * 6);
    expect(new Set(all).size).toBe(all.length);
    // Each rank stops about 3/4 through its share: the resume walks the order past every clip consumed.
    const part = await ranks({}, Math.floor((RANKS_MANY * 6 * 3) / (4 * world * small.batch)));
    const rest = await ranks({ resume: mergeCheckpoints(part.map((r) => r.state)) });
    for (const r of rest) expect(r.table!.peakPages).toBeLessThanOrEqual(bound);
    const resumed = [...part, ...rest].flatMap((r) => r.ids);
    expect(resumed.length).toBe(all.length);
    expect([...resumed].sort()).toEqual([...all].sort());
  }, 300_000);

  it("reads a table of many pages lazily by default, and whole with lazy: false", async () => {
    const byDefault = await run(undefined, {}, 1);
    expect(byDefault.table).toBeDefined();
    expect(byDefault.ds.totalClips).toBe(Infinity);
    expect(byDefault.ds.clipCount).toBe(Infinity);
    const whole = await run(false, {}, 1);
    expect(whole.table).toBeUndefined();
    expect(whole.ds.totalClips).toBe(OBJECTS * 6 - 6);
  }, 120_000);

  it("reads a table of one window or less whole, as without the lazy path", async () => {
    const url = `${edge.url}/v1/datasets/lq`;
    const lazy = await run(true, {}, Infinity, url);
    const eagerRun = await run(false, {}, Infinity, url);
    expect(lazy.table!.pageCount).toBeLessThanOrEqual(PAGE_WINDOW);
    expect(lazy.ds.totalClips).toBe(eagerRun.ds.totalClips);
    expect(lazy.errors).toEqual([]);
    expect(lazy.ids).toEqual(eagerRun.ids);
    expect(lazy.ids.length).toBe(8 * 6);
  }, 120_000);

  it("refuses an eager plan's checkpoint: pages group shards otherwise", async () => {
    const eagerRun = await run(false, {}, 1);
    await expect(run(true, { resume: eagerRun.state })).rejects.toMatchObject({ code: "ERR_RESUME_MISMATCH" });
    // By default it resumes as it was planned: whole.
    const rest = await run(undefined, { resume: eagerRun.state });
    expect(rest.table).toBeUndefined();
    const whole = await run(false, {});
    expect([...eagerRun.ids, ...rest.ids]).toEqual(whole.ids);
  }, 120_000);
});
