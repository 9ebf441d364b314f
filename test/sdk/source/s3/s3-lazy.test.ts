import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { tableEntry } from "../../../../common/dataset-table/entry.js";
import { buildGeneration } from "../../../../common/dataset-table/generation.js";
import type { LazyTable } from "../../../../common/lazy-table.js";
import { buildIndex, bytesReader } from "../../../../common/media-index/index.js";
import { mergeCheckpoints, open, type OpenOptions } from "../../../../sdk/index.js";
import { PAGE_WINDOW } from "../../../../sdk/sampler/shuffle.js";
import { openS3Source } from "../../../../sdk/source/s3/index.js";
import { makeVideo } from "../../../helpers/make-video.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";
import { putTable, testSigner } from "../../../helpers/seed-table.js";

/** Objects under lt/, 2 to a table page: 12 pages, three windows of the order. */
const OBJECTS = 24;

let dir: string;
let s3: S3TestServer;

const options = (): OpenOptions => ({
  endpoint: s3.endpoint,
  region: s3.region,
  credentials: s3.credentials,
  device: "cpu",
  frames: 4,
  batch: 2,
  seed: 5,
});

/** The clips a run delivers, its checkpoint and the table it read lazily (undefined: listed whole). */
async function run(lazy: boolean, extra: OpenOptions = {}, stopAfter = Infinity) {
  const url = `s3://${s3.bucket}/lt`;
  const source = await openS3Source(new URL(url), { ...options(), indexCacheDir: join(dir, `ic-${Math.random()}`) });
  let table: LazyTable | undefined;
  const listLazy = source.listLazy.bind(source);
  source.listLazy = async (o) => (table = await listLazy(o));
  const ds = await open(url, { ...options(), ...extra }, { source, lazy });
  const pagesAtOpen = table?.read.length;
  const ids: string[] = [];
  let batches = 0;
  let pagesAtFirst: number | undefined;
  for await (const b of ds) {
    ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    pagesAtFirst ??= table?.read.length;
    if (++batches >= stopAfter) break;
  }
  await ds.close();
  return { ids, state: ds.state(), table, pagesAtOpen, pagesAtFirst, total: ds.totalClips };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-s3-lazy-"));
  vi.stubEnv("EC_INDEX_CACHE_DIR", join(dir, "index-cache"));
  s3 = await startS3Server();
  const video = new Uint8Array(
    await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6 })),
  );
  const entries = [];
  for (let i = 0; i < OBJECTS; i++) {
    const key = `lt/v${String(i).padStart(3, "0")}.mp4`;
    const etag = await s3.put(key, video);
    entries.push(tableEntry(await buildIndex(bytesReader(video), { key, etag })));
  }
  // What the edge's indexer would have written into the bucket: a generation of pages of 2 entries.
  const generation = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: "lt",
    shardBytes: 2 * video.length,
    now: Math.floor(Date.now() / 1000),
    pinsApart: true,
    pageTarget: 2,
    directoryTarget: 2,
  });
  await putTable(s3, "lt", generation, await testSigner());
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("s3:// over the bucket's table read page by page", () => {
  it("reads no page at open, a window or two for the first batch, and every clip once", async () => {
    const eager = await run(false);
    const lazy = await run(true, { prefetch: 2, shuffleBuffer: 4 });
    expect(lazy.table!.pageCount).toBe(12);
    expect(lazy.pagesAtOpen).toBe(0);
    expect(lazy.pagesAtFirst).toBeLessThanOrEqual(2 * PAGE_WINDOW);
    expect(lazy.total).toBe(Infinity);
    expect(lazy.ids.length).toBe(OBJECTS * 6);
    expect([...lazy.ids].sort()).toEqual([...eager.ids].sort());
  }, 120_000);

  it("resumes 2 ranks from their merged checkpoints to every clip exactly once", async () => {
    const first = await Promise.all([0, 1].map((rank) => run(true, { rank, world: 2 }, 2)));
    const merged = mergeCheckpoints(first.map((r) => r.state));
    const rest = await Promise.all([0, 1].map((rank) => run(true, { rank, world: 2, resume: merged })));
    const all = [...first, ...rest].flatMap((r) => r.ids);
    expect(all.length).toBe(OBJECTS * 6);
    expect(new Set(all).size).toBe(all.length);
  }, 120_000);
});
