import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { DeleteObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodePageBytes, encodePageBytes } from "../../../../common/dataset-table/page-codec.js";
import { open, type OpenOptions } from "../../../../sdk/index.js";
import { shardsBySize } from "../../../../sdk/source/local-dir.js";
import { IndexDiskCache, openS3Source, type S3Source } from "../../../../sdk/source/s3/index.js";
import { localPageName, localTableEntries } from "../../../../sdk/source/s3/local-table.js";
import type { DatasetSource } from "../../../../sdk/source/source.js";
import { makeImage, makeNpy, makeVideo } from "../../../helpers/make-video.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

let dir: string;
let s3: S3TestServer;
let video: Uint8Array;
let other: Uint8Array;
const url = () => `s3://${s3.bucket}/lt`;

const options = (): OpenOptions => ({
  endpoint: s3.endpoint,
  region: s3.region,
  credentials: s3.credentials,
  device: "cpu",
  frames: 4,
  batch: 2,
});

const connect = (cacheDir: string) => openS3Source(new URL(url()), { ...options(), indexCacheDir: cacheDir }, {});

/** The source as it planned before local tables: a bare listing, every object's index read by the planner. */
function fromIndexes(source: S3Source): DatasetSource {
  return {
    list: async () => {
      const objects = await source.objects();
      return { objects, shards: shardsBySize(objects) };
    },
    index: (o) => source.index(o),
    read: (o, offset, length) => source.read(o, offset, length),
    plan: (ranges) => source.plan(ranges),
    stats: () => source.stats(),
    close: () => source.close(),
  };
}

/** The clips a run delivers ("key@start" in order), its checkpoint, and the index work done at open. */
async function run(cacheDir: string, extra: OpenOptions, o: { indexes?: boolean; stopAfter?: number } = {}) {
  const source = await connect(cacheDir);
  const before = s3.requests;
  const ds = await open(url(), { ...options(), ...extra }, { source: o.indexes ? fromIndexes(source) : source });
  const atOpen = { ...source.counters(), requests: s3.requests - before };
  const ids: string[] = [];
  let batches = 0;
  for await (const b of ds) {
    ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    if (++batches >= (o.stopAfter ?? Infinity)) break;
  }
  await ds.close();
  return { ids, state: ds.state(), generation: ds.generation, atOpen, errors: ds.stats().errors };
}

const tableFile = async (cacheDir: string, suffix: ".tbl" | ".tbp") => {
  const names = (await readdir(cacheDir)).filter((n) => n.endsWith(suffix));
  expect(names).toHaveLength(1);
  const name = names[0];
  expect(name).toBeDefined();
  return join(cacheDir, name!);
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-local-table-"));
  s3 = await startS3Server();
  video = new Uint8Array(
    await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 36, gop: 6, bframes: 2 })),
  );
  other = new Uint8Array(
    await readFile(await makeVideo(dir, { codec: "hevc", width: 64, height: 48, frames: 24, gop: 8, name: "b.mp4" })),
  );
  await s3.put("lt/a.mp4", video);
  await s3.put("lt/sub/b.mp4", other);
  await s3.put("lt/sub/i.png", await readFile(await makeImage(dir, { format: "png", width: 32, height: 24 })));
  await s3.put("lt/x.npy", await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 3] })));
  await s3.put("lt/broken.mp4", video.slice(0, 3000));
}, 120_000);

afterAll(async () => {
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("r2:// and s3:// keep a local table where the bucket has none", () => {
  it("plans the second open from the local table, reading no index, exactly as from every index", async () => {
    const cacheDir = join(dir, "same");
    const first = await run(cacheDir, { seed: 3 });
    expect(first.atOpen).toMatchObject({ indexMisses: 5, tableIndexed: 5 });
    expect(first.generation).toBeUndefined();
    for (const extra of [
      { seed: 3 },
      { seed: 3, rank: 1, world: 2 },
      { seed: 9, align: "exact" as const, stride: 2 },
      { shuffle: "global" as const, seed: 1, rank: 0, world: 3 },
    ]) {
      const fromTable = await run(cacheDir, extra);
      // No object's index is read at open: not from the bucket, not from the per-object cache.
      expect(fromTable.atOpen).toMatchObject({ indexHits: 0, indexMisses: 0, indexRequests: 0, tableIndexed: 0 });
      // What the bucket saw: one listing page and the two probes for an edge table, no range GET.
      expect(fromTable.atOpen.requests).toBe(3);
      const reference = await run(join(dir, `ref-${Math.random()}`), extra, { indexes: true });
      expect(reference.atOpen.indexMisses).toBe(5);
      expect(fromTable.ids.length).toBeGreaterThan(0);
      expect(fromTable.ids).toEqual(reference.ids);
      expect(fromTable.state.fingerprint).toBe(reference.state.fingerprint);
      expect(fromTable.generation).toBeUndefined();
      expect(fromTable.errors).toEqual(reference.errors);
      expect(fromTable.errors).toEqual({ ERR_TRUNCATED: 1 });
    }
    // A checkpoint of either resumes the same rest in both.
    const partial = await run(cacheDir, { seed: 5 }, { stopAfter: 2 });
    const rest = await run(cacheDir, { resume: partial.state });
    expect(rest.atOpen.indexRequests).toBe(0);
    expect((await run(join(dir, "ref-resume"), { resume: partial.state }, { indexes: true })).ids).toEqual(rest.ids);
    const whole = await run(cacheDir, { seed: 5 });
    expect([...partial.ids, ...rest.ids].sort()).toEqual([...whole.ids].sort());
  });

  it("indexes only new and changed objects and drops removed ones", async () => {
    const cacheDir = join(dir, "changes");
    await run(cacheDir, { seed: 4 });
    await s3.put("lt/c.mp4", other);
    await s3.put("lt/a.mp4", other); // a new etag under the same key
    await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: "lt/x.npy" }));
    try {
      const changed = await run(cacheDir, { seed: 4 });
      expect(changed.atOpen).toMatchObject({ indexHits: 0, indexMisses: 2, tableIndexed: 2 });
      expect(changed.atOpen.indexRequests).toBeGreaterThan(0);
      const reference = await run(join(dir, "ref-changes"), { seed: 4 }, { indexes: true });
      expect(changed.ids).toEqual(reference.ids);
      expect(changed.state.fingerprint).toBe(reference.state.fingerprint);
      expect(changed.ids.some((id) => id.startsWith("lt/x.npy"))).toBe(false);
      // The updated table is what the next open plans from.
      const again = await run(cacheDir, { seed: 4 });
      expect(again.atOpen).toMatchObject({ indexMisses: 0, indexRequests: 0, tableIndexed: 0 });
      expect(again.ids).toEqual(reference.ids);
    } finally {
      await s3.put("lt/a.mp4", video);
      await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: "lt/c.mp4" }));
      await s3.put("lt/x.npy", await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 3] })));
    }
  });

  it("never trusts a truncated, altered, foreign or older local table: it is rebuilt from the indexes", async () => {
    const cacheDir = join(dir, "corrupt");
    const good = await run(cacheDir, { seed: 6 });
    const head = await tableFile(cacheDir, ".tbl");
    const page = await tableFile(cacheDir, ".tbp");
    const [headBytes, pageBytes] = [await readFile(head), await readFile(page)];
    const parsed = JSON.parse(headBytes.toString()) as { index: number; pages: { sha256: string }[] };
    // An entry altered behind the digest's back: a plausible page, but not the one the head names.
    const decoded = decodePageBytes(new Uint8Array(gunzipSync(pageBytes)));
    const altered = decoded.entries.entries();
    altered.find((e) => e.key === "lt/a.mp4")!.frames = 8;
    const damages: [string, Buffer][] = [
      [head, headBytes.subarray(0, headBytes.length - 7)],
      [page, pageBytes.subarray(0, pageBytes.length - 7)],
      [page, gzipSync(encodePageBytes(decoded.root, altered))],
      // A table an older indexer reduced its entries from (the index format is in its head).
      [head, Buffer.from(JSON.stringify({ ...parsed, index: parsed.index - 1 }))],
      // Another prefix's head under this name.
      [head, Buffer.from(JSON.stringify({ ...parsed, prefix: "other/" }))],
      // The one-file format of an older ec: a head line, then the whole table as one gzip page.
      [
        head,
        Buffer.concat([
          Buffer.from(
            `${JSON.stringify({ ...parsed, version: 1, pages: undefined, sha256: parsed.pages[0]!.sha256 })}\n`,
          ),
          pageBytes,
        ]),
      ],
    ];
    for (const [file, damaged] of damages) {
      for (const name of await readdir(cacheDir)) if (/\.tb[lp]$/.test(name)) await rm(join(cacheDir, name));
      await writeFile(head, headBytes);
      await writeFile(page, pageBytes);
      await writeFile(file, damaged);
      const rebuilt = await run(cacheDir, { seed: 6 });
      // Every object comes back from its per-object index (on disk), none from the damaged table.
      expect(rebuilt.atOpen).toMatchObject({ indexHits: 5, indexMisses: 0, indexRequests: 0, tableIndexed: 5 });
      expect(rebuilt.ids).toEqual(good.ids);
      const again = await run(cacheDir, { seed: 6 });
      expect(again.atOpen).toMatchObject({ indexHits: 0, indexMisses: 0, tableIndexed: 0 });
      expect(again.ids).toEqual(good.ids);
    }
  });

  it("says once that the bucket has no table, and whether it planned from every index or the local table", async () => {
    for (const at of [url(), `r2://${"0".repeat(32)}/${s3.bucket}/lt`]) {
      const cacheDir = join(dir, `notice-${at.slice(0, 2)}`);
      const opened = async () => {
        const source = await openS3Source(new URL(at), { ...options(), indexCacheDir: cacheDir }, {});
        const seen = await warningsDuring(async () => {
          const ds = await open(at, { ...options(), seed: 2 }, { source });
          for await (const _ of ds);
          await ds.close();
        });
        return seen.filter((w) => w.code === "ERR_TABLE_MISSING");
      };
      const first = await opened();
      expect(first).toHaveLength(1);
      expect(first[0]!.message).toContain(`No dataset table for ${at.slice(0, 2)}://${s3.bucket}/lt/ in the bucket`);
      expect(first[0]!.message).toContain("planning from every object's index");
      expect(first[0]!.message).toContain("`ec index` on the dataset's URL builds one");
      const second = await opened();
      expect(second).toHaveLength(1);
      expect(second[0]!.message).toContain(`planned from the local table in ${cacheDir} (0 of 5 objects indexed again`);
      await s3.put("lt/new.npy", await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 2] })));
      try {
        const third = await opened();
        expect(third.map((w) => w.message)).toEqual([expect.stringContaining("(1 of 6 objects indexed again")]);
      } finally {
        await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: "lt/new.npy" }));
      }
    }
  });
});

describe("the local table is kept in pages by key range", () => {
  const at = { scope: "pages", prefix: "lt/", pageTarget: 2 };
  const pageFiles = async (cacheDir: string) => (await readdir(cacheDir)).filter((n) => n.endsWith(".tbp")).sort();

  it("rewrites only the pages that hold changed objects; a lost page costs its objects' indexes, never the plan", async () => {
    const source = await connect(join(dir, "pages-indexes"));
    const entriesIn = async (table: IndexDiskCache) =>
      localTableEntries(await source.objects(), (o) => source.index(o), table, at);
    try {
      const cacheDir = join(dir, "pages");
      const table = new IndexDiskCache(cacheDir);
      const first = await entriesIn(table);
      // Five objects cut two to a page: [a, broken] [sub/b, sub/i] [x].
      expect(first).toMatchObject({ indexed: 5, reused: 0, pagesRead: 0, pagesWritten: 3 });
      const written = await pageFiles(cacheDir);
      expect(written).toEqual(["1-0", "1-1", "1-2"].map((p) => localPageName(at, p)).sort());
      expect(await entriesIn(table)).toEqual({ ...first, indexed: 0, reused: 5, pagesRead: 3, pagesWritten: 0 });

      await s3.put("lt/sub/b.mp4", video);
      try {
        const changed = await entriesIn(table);
        expect(changed).toMatchObject({ indexed: 1, reused: 4, pagesRead: 3, pagesWritten: 1 });
        const reference = await entriesIn(new IndexDiskCache(join(dir, `pages-ref-${Math.random()}`)));
        expect(changed.entries).toEqual(reference.entries);
        // The other two pages are the same files; the rewritten one has a new name, the old one is gone.
        const now = await pageFiles(cacheDir);
        expect(now).toEqual([localPageName(at, "1-0"), localPageName(at, "1-2"), localPageName(at, "2-0")].sort());

        for (const [lost, objects] of [
          ["1-2", 1],
          ["1-0", 2],
        ] as const) {
          await rm(join(cacheDir, localPageName(at, lost)));
          const after = await entriesIn(table);
          expect(after).toMatchObject({ indexed: objects, reused: 5 - objects, pagesRead: 2, pagesWritten: 1 });
          expect(after.entries).toEqual(reference.entries);
        }
        expect(await entriesIn(table)).toMatchObject({ indexed: 0, pagesRead: 3, entries: reference.entries });
      } finally {
        await s3.put("lt/sub/b.mp4", other);
      }
    } finally {
      await source.close();
    }
  });

  it("keeps the pages that fit its own bound, in key order, and counts the objects of the rest", async () => {
    const source = await connect(join(dir, "bound-indexes"));
    const entriesIn = async (table: IndexDiskCache) =>
      localTableEntries(await source.objects(), (o) => source.index(o), table, at);
    try {
      const wholeDir = join(dir, "bound-whole");
      const reference = await entriesIn(new IndexDiskCache(wholeDir));
      expect(reference.unkept).toBe(0);
      const size = async (name: string) => (await stat(join(wholeDir, name))).size;
      const headFile = (await readdir(wholeDir)).find((n) => n.endsWith(".tbl"))!;
      // Room for the head and the first page [a, broken], not for the second.
      const bound = (await size(headFile)) + (await size(localPageName(at, "1-0"))) + 10;
      const bounded = new IndexDiskCache(join(dir, "bound"), undefined, bound);
      expect(await entriesIn(bounded)).toMatchObject({ indexed: 5, pagesWritten: 1, unkept: 3 });
      for (let i = 0; i < 3; i++) {
        const next = await entriesIn(bounded);
        expect(next.entries).toEqual(reference.entries);
        // The same three objects every time: what was kept stays, the rest never evicts it.
        expect(next).toMatchObject({ indexed: 3, reused: 2, unkept: 3, pagesRead: 1 });
        expect(await pageFiles(join(dir, "bound"))).toHaveLength(1);
        expect(await bounded.bytes("table")).toBeLessThanOrEqual(bound);
      }
    } finally {
      await source.close();
    }
  });
});

describe("the local table has a bound of its own", () => {
  const many = Array.from({ length: 150 }, (_, i) => `lt-many/${String(i).padStart(4, "0")}.npy`);
  const manyUrl = () => `s3://${s3.bucket}/lt-many`;
  beforeAll(async () => {
    const npy = await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 3], name: "many.npy" }));
    await s3.seed(many.map((key) => ({ key, body: npy })));
  });

  /** open() and the whole epoch over a cache whose bound for indexes is `indexBytes`. */
  async function streamAll(cacheDir: string, indexBytes: number, tableBytes?: number) {
    const source = await openS3Source(
      new URL(manyUrl()),
      {
        ...options(),
        indexCacheDir: cacheDir,
        indexCacheBytes: indexBytes,
        ...(tableBytes === undefined ? {} : { localTableBytes: tableBytes }),
      },
      {},
    );
    const result: { atOpen?: ReturnType<S3Source["counters"]>; clips?: number } = {};
    const notices = await warningsDuring(async () => {
      const ds = await open(manyUrl(), { ...options(), seed: 1 }, { source });
      const atOpen = source.counters();
      let clips = 0;
      for await (const b of ds) clips += b.clips.length;
      await ds.close();
      Object.assign(result, { atOpen, clips });
    });
    return { ...(result as Required<typeof result>), notices: notices.filter((w) => w.code === "ERR_TABLE_MISSING") };
  }

  it("keeps it while the prefix's indexes pass the cache's bound: the next open indexes nothing", async () => {
    const cacheDir = join(dir, "own-bound");
    // Far below the 150 indexes the epoch reads: the stream evicts and rebuilds them as it goes.
    const first = await streamAll(cacheDir, 2048);
    expect(first.atOpen).toMatchObject({ tableIndexed: many.length, tableUnkept: 0 });
    expect(first.clips).toBe(many.length);
    for (let i = 0; i < 2; i++) {
      const next = await streamAll(cacheDir, 2048);
      expect(next.atOpen).toMatchObject({ tableIndexed: 0, indexRequests: 0, tableUnkept: 0 });
      expect(next.clips).toBe(many.length);
      expect(next.notices.map((w) => w.message)).toEqual([expect.stringContaining("(0 of 150 objects indexed again")]);
    }
  });

  it("says at each open how many objects did not fit the table's bound, and takes the bound from the environment", async () => {
    const cacheDir = join(dir, "table-bound");
    const first = await streamAll(cacheDir, 1 << 20, 700);
    expect(first.atOpen.tableUnkept).toBeGreaterThan(0);
    const unkept = first.atOpen.tableUnkept;
    for (const run of [first, await streamAll(cacheDir, 1 << 20, 700)]) {
      expect(run.atOpen.tableUnkept).toBe(unkept);
      expect(run.clips).toBe(many.length);
      expect(run.notices).toHaveLength(1);
      expect(run.notices[0]!.message).toContain(
        `${unkept} of 150 objects did not fit the local table's bound of 700 bytes (EC_LOCAL_TABLE_BYTES) and are indexed again at every open`,
      );
    }
    const o = { ...options(), indexCacheDir: cacheDir };
    const fromEnv = await openS3Source(new URL(manyUrl()), o, { EC_LOCAL_TABLE_BYTES: "700" });
    await fromEnv.list();
    expect(fromEnv.counters()).toMatchObject({ tableUnkept: unkept, tableIndexed: unkept });
    await fromEnv.close();
    for (const bad of ["0", "-5", "1e9", "lots"])
      await expect(openS3Source(new URL(manyUrl()), o, { EC_LOCAL_TABLE_BYTES: bad })).rejects.toMatchObject({
        code: "ERR_INVALID_OPTION",
        message: `Expected a positive integer of bytes for EC_LOCAL_TABLE_BYTES but received ${bad}`,
      });
  });
});

/** The process warnings emitted while `fn` runs (open() says its notices so, once each). */
async function warningsDuring(fn: () => Promise<void>): Promise<(Error & { code?: string })[]> {
  const seen: (Error & { code?: string })[] = [];
  const listen = (w: Error) => seen.push(w);
  process.on("warning", listen);
  try {
    await fn();
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off("warning", listen);
  }
  return seen;
}
