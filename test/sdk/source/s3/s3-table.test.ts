import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { tableEntry } from "../../../../common/dataset-table/entry.js";
import { decodeDirectory } from "../../../../common/dataset-table/directory.js";
import { buildGeneration } from "../../../../common/dataset-table/generation.js";
import { tableKeys } from "../../../../common/dataset-table/table-keys.js";
import { publicKeys, signJson } from "../../../../common/manifest-sign.js";
import { buildIndex, bytesReader } from "../../../../common/media-index/index.js";
import type { TableEntryV1, TableHeadV1, TablePageRefV1 } from "../../../../common/schema/index.js";
import { pageEntries } from "../../../../common/dataset-table/page-pins.js";
import { open, type OpenOptions } from "../../../../sdk/index.js";
import { openS3Source } from "../../../../sdk/source/s3/index.js";
import { makeNpy, makeVideo } from "../../../helpers/make-video.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";
import { putTable, testSigner } from "../../../helpers/seed-table.js";

let dir: string;
let s3: S3TestServer;
const files = new Map<string, Uint8Array>();
const etags = new Map<string, string>();

const options = (): OpenOptions => ({
  endpoint: s3.endpoint,
  region: s3.region,
  credentials: s3.credentials,
  device: "cpu",
  frames: 4,
  seed: 2,
});

/** The bucket as an r2:// URL: the account names the endpoint, which the test server stands in for. */
const datasetUrl = (scheme: "s3" | "r2") =>
  scheme === "s3" ? `s3://${s3.bucket}/tbl` : `r2://${"0".repeat(32)}/${s3.bucket}/tbl`;

async function run(extra: OpenOptions = {}, o: { scheme?: "s3" | "r2"; stopAfter?: number } = {}) {
  const url = datasetUrl(o.scheme ?? "s3");
  const source = await openS3Source(new URL(url), { ...options(), indexCacheDir: join(dir, `ic-${Math.random()}`) });
  const notices: string[] = [];
  const listen = (w: Error & { code?: string }) => notices.push(w.code ?? w.name);
  process.on("warning", listen);
  try {
    const ds = await open(url, { ...options(), ...extra }, { source });
    const builtAtOpen = source.counters().indexMisses;
    const ids: string[] = [];
    for await (const b of ds) {
      ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
      if (ids.length >= (o.stopAfter ?? Infinity)) break;
    }
    await ds.close();
    await new Promise((r) => setImmediate(r));
    const state = ds.state();
    return {
      ids,
      generation: ds.generation,
      builtAtOpen,
      fingerprint: state.fingerprint,
      state,
      notices,
      ...ds.stats(),
    };
  } finally {
    process.off("warning", listen);
  }
}

const signer = testSigner();
let published: TableHeadV1 | undefined;
const publishedPages = new Map<string, TableEntryV1[]>();
const publishedDirectories = new Map<string, TablePageRefV1[]>();

/**
 * What the edge's indexer would have written into the bucket: the next signed generation with
 * the entries of `keys` (from their bytes in `files`), its pages and the public keys.
 */
async function publish(keys: readonly string[]): Promise<number> {
  const entries = await Promise.all(
    keys.map(async (key) => tableEntry(await buildIndex(bytesReader(files.get(key)!), { key, etag: etags.get(key)! }))),
  );
  const generation = await buildGeneration(
    published,
    new Map(entries.map((e) => [e.key, e])),
    async (ref) => publishedPages.get(ref.name)!,
    {
      root: "tbl",
      shardBytes: 128 << 20,
      now: Math.floor(Date.now() / 1000),
      pinsApart: true,
      directory: async (ref) => publishedDirectories.get(ref.name)!,
    },
  );
  const { head, pages } = generation;
  const directories = new Set(head.directories.map((d) => d.name));
  for (const p of pages) {
    const pins = p.pins && new Uint8Array(gunzipSync(p.pins));
    // Directory pages are stored as pages are, and list them.
    if (directories.has(p.name)) publishedDirectories.set(p.name, decodeDirectory(new Uint8Array(gunzipSync(p.gz))));
    else publishedPages.set(p.name, pageEntries(new Uint8Array(gunzipSync(p.gz)), pins));
  }
  await putTable(s3, "tbl", generation, await signer);
  published = head;
  return head.generation;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-s3-table-"));
  vi.stubEnv("EC_INDEX_CACHE_DIR", join(dir, "index-cache"));
  s3 = await startS3Server();
  files.set(
    "tbl/a.mp4",
    new Uint8Array(
      await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 36, gop: 6, bframes: 2 })),
    ),
  );
  files.set(
    "tbl/sub/b.mp4",
    new Uint8Array(
      await readFile(
        await makeVideo(dir, {
          codec: "hevc",
          width: 64,
          height: 48,
          frames: 24,
          gop: 8,
          faststart: true,
          name: "b.mp4",
        }),
      ),
    ),
  );
  files.set("tbl/broken.mp4", files.get("tbl/a.mp4")!.slice(0, 3000));
  for (const [key, bytes] of files) etags.set(key, await s3.put(key, bytes));
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("r2:// and s3:// read the edge's dataset table when the bucket has one", () => {
  it("plans the same clips from the table as from indexes built on the client, and builds none at open", async () => {
    const before = await run();
    expect(before.generation).toBeUndefined();
    expect(before.builtAtOpen).toBe(3);
    expect(before.notices).toEqual(["ERR_TABLE_MISSING"]);
    expect(await publish([...files.keys()])).toBe(1);
    const after = await run();
    expect(after.generation).toBe(1);
    expect(after.builtAtOpen).toBe(0);
    // Planned from the bucket's table: nothing to say.
    expect(after.notices).toEqual([]);
    expect(after.ids).toEqual(before.ids);
    expect(after.fingerprint).toBe(before.fingerprint);
    // Ranks split the same epoch order (GOP runs kept on one rank): disjoint, covering, each in order.
    const ranks = [(await run({ rank: 0, world: 2 })).ids, (await run({ rank: 1, world: 2 })).ids];
    expect([...ranks[0]!, ...ranks[1]!].sort()).toEqual([...before.ids].sort());
    for (const ids of ranks) expect(ids).toEqual(before.ids.filter((id) => ids.includes(id)));
    // The same bucket as r2://ACCOUNT/BUCKET/PREFIX: the same table, the same plan.
    const r2 = await run({}, { scheme: "r2" });
    expect(r2).toMatchObject({ generation: 1, builtAtOpen: 0, notices: [], ids: before.ids });
  });

  it("resumes a checkpoint on the older generation it pinned, while a fresh open plans from the newest", async () => {
    const whole = await run({ seed: 4 });
    expect(whole.generation).toBe(1);
    const partial = await run({ seed: 4 }, { stopAfter: 3 });
    expect(partial.state.generation).toBe(1);
    files.set("tbl/c.mp4", files.get("tbl/sub/b.mp4")!);
    etags.set("tbl/c.mp4", await s3.put("tbl/c.mp4", files.get("tbl/c.mp4")!));
    expect(await publish(["tbl/c.mp4"])).toBe(2);
    for (const scheme of ["s3", "r2"] as const) {
      const fresh = await run({ seed: 4 }, { scheme });
      expect(fresh.generation).toBe(2);
      expect(fresh.builtAtOpen).toBe(0);
      expect(fresh.ids.some((id) => id.startsWith("tbl/c.mp4@"))).toBe(true);
      // The rest of generation 1's epoch, without the object generation 2 added.
      const rest = await run({ seed: 4, resume: partial.state }, { scheme });
      expect(rest).toMatchObject({ generation: 1, builtAtOpen: 0, notices: [] });
      expect([...partial.ids, ...rest.ids].sort()).toEqual([...whole.ids].sort());
    }
    // A generation the bucket no longer keeps cannot be resumed silently from another one.
    await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: tableKeys.generation("tbl", 1) }));
    await expect(run({ seed: 4, resume: partial.state })).rejects.toMatchObject({ code: "ERR_RESUME_MISMATCH" });
  });

  it("reports an object overwritten after its table entry as ERR_ETAG_CHANGED and streams the rest", async () => {
    const reference = await run({ seed: 5 });
    await s3.put("tbl/a.mp4", files.get("tbl/sub/b.mp4")!);
    try {
      const stale = await run({ seed: 5 });
      expect(stale.generation).toBe(reference.generation);
      expect(stale.errors).toMatchObject({ ERR_ETAG_CHANGED: expect.any(Number) });
      expect(stale.ids.some((id) => id.startsWith("tbl/a.mp4@"))).toBe(false);
      expect(stale.ids).toEqual(reference.ids.filter((id) => !id.startsWith("tbl/a.mp4@")));
    } finally {
      etags.set("tbl/a.mp4", await s3.put("tbl/a.mp4", files.get("tbl/a.mp4")!));
    }
  });
});

describe("a bucket's table of many pages", () => {
  const root = "tblpages";
  const keys = Array.from({ length: 300 }, (_, i) => `${root}/${String(i).padStart(4, "0")}.npy`);
  const url = `s3://ec-test/${root}`;
  let pages = 0;

  beforeAll(async () => {
    const npy = new Uint8Array(await readFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 3], name: "p.npy" })));
    await s3.seed(keys.map((key) => ({ key, body: npy })));
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${root}/` }));
    const etag = listed.Contents![0]!.ETag!;
    const entries = await Promise.all(
      keys.map(async (key) => tableEntry(await buildIndex(bytesReader(npy), { key, etag }))),
    );
    // Three objects a page: 100 pages, more than the reader keeps in flight.
    const generation = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
      root,
      shardBytes: 128 << 20,
      now: Math.floor(Date.now() / 1000),
      pageTarget: 3,
      pinsApart: true,
    });
    // 100 pages and their one directory page.
    pages = generation.pages.length - generation.head.directories.length;
    await putTable(s3, root, generation, await signer, { generationHead: false });
  }, 120_000);

  /**
   * open() of the prefix read whole (the lazy path's opt-out): what the bucket saw (requests,
   * listings, most at once) and what was planned.
   */
  async function opened() {
    const source = await openS3Source(new URL(url), { ...options(), indexCacheDir: join(dir, `ic-${Math.random()}`) });
    const before = { requests: s3.requests, listings: s3.listings };
    s3.resetPeak();
    const ds = await open(url, { ...options(), batch: 1 }, { source, lazy: false });
    const seen = {
      requests: s3.requests - before.requests,
      listings: s3.listings - before.listings,
      peak: s3.peakInFlight,
      generation: ds.generation,
      clips: ds.totalClips,
      built: source.counters().indexMisses,
    };
    await ds.close();
    return seen;
  }

  it("is read page by page, many at once and no more than the bound, without listing the prefix", async () => {
    expect(pages).toBe(100);
    const seen = await opened();
    // The public keys, the head, its directory page and each page once: no ListObjectsV2, no index.
    expect(seen).toMatchObject({ requests: 3 + pages, listings: 0, generation: 1, clips: keys.length, built: 0 });
    expect(seen.peak).toBeGreaterThan(4);
    expect(seen.peak).toBeLessThanOrEqual(64);
  });

  it("fetches a page's pins (its etags) only ahead of reading its objects, once a page", async () => {
    const source = await openS3Source(new URL(url), { ...options(), indexCacheDir: join(dir, `ic-${Math.random()}`) });
    const at = s3.gets.length;
    const ds = await open(url, { ...options(), batch: 1 }, { source });
    const pinsAt = () => s3.gets.slice(at).filter((p) => p.endsWith(".pins"));
    expect(pinsAt()).toEqual([]);
    const it = ds[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    // Three objects a page, in key order: page n holds objects 3n to 3n + 2.
    const pins = pinsAt().map((p) => Number(/-([0-9]+)\.pins$/.exec(p)![1]));
    const read = s3.gets.slice(at).flatMap((p) => /\/([0-9]{4})\.npy$/.exec(p)?.[1] ?? []);
    expect(read.length).toBeGreaterThan(0);
    // The pages of the objects read (the first batch and the window read ahead of it), each once.
    expect(new Set(pins).size).toBe(pins.length);
    expect(new Set(pins)).toEqual(new Set(read.map((k) => Math.floor(Number(k) / 3))));
    expect(pins.length).toBeLessThan(pages);
    await it.return!(undefined);
    await ds.close();
  });

  it("leaves an object uploaded after the generation to the next one, as the edge does, and still lists nothing", async () => {
    const late = `${root}/9999.npy`;
    await s3.put(late, files.get("tbl/a.mp4")!.slice(0, 64));
    try {
      expect(await opened()).toMatchObject({ requests: 3 + pages, listings: 0, generation: 1, clips: keys.length });
    } finally {
      await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: late }));
    }
  });
});

describe("the bucket's table is trusted as an edge's is", () => {
  it("a table re-signed by whoever may write the bucket: ERR_MANIFEST_KEY_CHANGED after first use, ERR_MANIFEST_UNKNOWN_KEY against a pin", async () => {
    if (!published) await publish([...files.keys()]);
    const head = published!;
    const knownEdges = join(dir, "known-edges.json");
    const list = async (o: { edgeKeys?: string[] } = {}) => {
      const source = await openS3Source(new URL(datasetUrl("s3")), {
        ...options(),
        indexCacheDir: join(dir, `ic-${Math.random()}`),
        knownEdges,
        ...o,
      });
      try {
        return await source.list();
      } finally {
        await source.close();
      }
    };
    const put = (Key: string, Body: string) => s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body }));
    const sign = async (by: Awaited<typeof signer>) => {
      await put(tableKeys.head("tbl"), JSON.stringify(await signJson(head, by)));
      await put(tableKeys.publicKeys(), JSON.stringify(publicKeys([by])));
    };
    expect((await list()).generation).toBe(head.generation);

    const forger = await testSigner();
    await sign(forger);
    try {
      await expect(list()).rejects.toMatchObject({ code: "ERR_MANIFEST_KEY_CHANGED" });
      await expect(list({ edgeKeys: [(await signer).publicKey] })).rejects.toMatchObject({
        code: "ERR_MANIFEST_UNKNOWN_KEY",
      });
    } finally {
      await sign(await signer);
    }
    expect((await list({ edgeKeys: [(await signer).publicKey] })).generation).toBe(head.generation);
  });
});
