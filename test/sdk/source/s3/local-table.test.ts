import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { DeleteObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type OpenOptions } from "../../../../sdk/index.js";
import { shardsBySize } from "../../../../sdk/source/local-dir.js";
import { openS3Source, type S3Source } from "../../../../sdk/source/s3/index.js";
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

const tableFile = async (cacheDir: string) => {
  const name = (await readdir(cacheDir)).find((n) => n.endsWith(".tbl"));
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

  it("never trusts a truncated, altered or older local table: it is rebuilt from the indexes", async () => {
    const cacheDir = join(dir, "corrupt");
    const good = await run(cacheDir, { seed: 6 });
    const file = await tableFile(cacheDir);
    const bytes = await readFile(file);
    const newline = bytes.indexOf(0x0a);
    // An entry altered behind the checksum's back: a plausible page, but not the one the head names.
    const page = JSON.parse(gunzipSync(bytes.subarray(newline + 1)).toString()) as {
      entries: { key: string; frames?: number }[];
    };
    const a = page.entries.find((e) => e.key === "lt/a.mp4")!;
    a.frames = 8;
    const altered = Buffer.concat([bytes.subarray(0, newline + 1), gzipSync(JSON.stringify(page))]);
    // A table an older indexer reduced its entries from (the index format is in its head).
    const head = JSON.parse(bytes.subarray(0, newline).toString()) as { index: number };
    const older = Buffer.concat([
      Buffer.from(JSON.stringify({ ...head, index: head.index - 1 })),
      bytes.subarray(newline),
    ]);
    for (const damaged of [bytes.subarray(0, bytes.length - 7), altered, older]) {
      await writeFile(file, damaged);
      const rebuilt = await run(cacheDir, { seed: 6 });
      // Every object comes back from its per-object index (on disk), none from the damaged table.
      expect(rebuilt.atOpen).toMatchObject({ indexHits: 5, indexMisses: 0, indexRequests: 0, tableIndexed: 5 });
      expect(rebuilt.ids).toEqual(good.ids);
      expect(Buffer.from(await readFile(file)).equals(bytes)).toBe(true);
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
      const second = await opened();
      expect(second).toHaveLength(1);
      expect(second[0]!.message).toContain(
        `planned from the local table in ${cacheDir} (0 of 5 objects new or changed`,
      );
      await s3.put("lt/new.npy", await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 2] })));
      try {
        const third = await opened();
        expect(third.map((w) => w.message)).toEqual([expect.stringContaining("(1 of 6 objects new or changed")]);
      } finally {
        await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: "lt/new.npy" }));
      }
    }
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
