import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { decodePageBytes } from "../../../../common/dataset-table/page-codec.js";
import { GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageEntries } from "../../../../common/dataset-table/page-pins.js";
import { tableKeys } from "../../../../common/dataset-table/table-keys.js";
import { SignedManifestV1, type TableEntryV1, type TablePageRefV1 } from "../../../../common/schema/index.js";
import { openS3Source } from "../../../../sdk/source/s3/index.js";
import { chunker, chunkShard } from "../../../../sdk/source/s3/table-shards.js";
import { cleanEnv, ec, ecSpawn, ensureBuilt } from "../../../helpers/ec-process.js";
import { makeVideo } from "../../../helpers/make-video.js";
import { createBucket, startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

// `ec index s3://… --shard I/N` as real CLI processes against a real S3 server: four shards, one
// killed once it has recorded a chunk and rerun alone, then the table equals one machine's.
const ONE = "ec-one";
const SHARDED = "ec-sharded";
const N = 4;
/** Pages of 4 entries: 60-odd objects make about 16 chunks, so every shard has work. */
const TARGET = "4";

let dir: string;
let s3: S3TestServer;
/** While set, decides which requests wait (and the killed shard's never get an answer). */
let holding: ((r: { method: string; path: string }) => Promise<void> | undefined) | undefined;
const manifestKey = generateKeyPairSync("ed25519")
  .privateKey.export({ type: "pkcs8", format: "der" })
  .toString("base64");

const env = (extra: Record<string, string> = {}) =>
  cleanEnv({
    AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    AWS_REGION: s3.region,
    EC_MANIFEST_KEY: manifestKey,
    EC_INDEX_CACHE_DIR: join(dir, `ic-${Math.random()}`),
    ...extra,
  });
const flags = (bucket: string, ...rest: string[]) => [
  "index",
  `s3://${bucket}/ds`,
  "--s3-endpoint",
  s3.endpoint,
  "--path-style",
  "--page-target",
  TARGET,
  "--json",
  ...rest,
];

async function get(bucket: string, key: string): Promise<Uint8Array> {
  const out = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return out.Body!.transformToByteArray();
}

async function keys(bucket: string, prefix: string): Promise<string[]> {
  const out = await s3.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

/**
 * The latest head of the `ds` table, its page refs in key order and every entry its pages hold.
 * A head that names directory pages rather than pages is read through them.
 */
async function table(
  bucket: string,
): Promise<{ objects: number; pages: TablePageRefV1[]; entries: TableEntryV1[]; sharded: boolean[] }> {
  const signed = SignedManifestV1.parse(JSON.parse(new TextDecoder().decode(await get(bucket, tableKeys.head("ds")))));
  const head = JSON.parse(signed.payload) as {
    objects: number;
    shardBytes: number;
    pages?: TablePageRefV1[];
    directories?: { name: string }[];
  };
  const gunzipJson = async (name: string) =>
    JSON.parse(gunzipSync(await get(bucket, tableKeys.page("ds", name))).toString()) as { pages: TablePageRefV1[] };
  const pages =
    head.pages ?? (await Promise.all((head.directories ?? []).map((d) => gunzipJson(d.name)))).flatMap((d) => d.pages);
  const entries: TableEntryV1[] = [];
  /** Whether each page stores its shards at the head's target (page format 4). */
  const sharded: boolean[] = [];
  for (const ref of pages) {
    const page = new Uint8Array(gunzipSync(await get(bucket, tableKeys.page("ds", ref.name))));
    sharded.push(decodePageBytes(page).entries.shardStarts(head.shardBytes) !== undefined);
    const pins = ref.pins ? new Uint8Array(gunzipSync(await get(bucket, tableKeys.pins("ds", ref.name)))) : undefined;
    entries.push(...pageEntries(page, pins));
  }
  return { objects: head.objects, pages, entries, sharded };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-shard-index-"));
  s3 = await startS3Server({ buckets: [ONE], hold: (r) => holding?.(r) });
  await createBucket(s3, SHARDED);
  const videos = new Map<string, Uint8Array>([
    ["ds/v/a.mp4", await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6 }))],
    [
      "ds/v/b.mp4",
      await readFile(
        await makeVideo(dir, { codec: "hevc", width: 64, height: 48, frames: 16, gop: 8, faststart: true }),
      ),
    ],
    [
      "ds/v/c.mp4",
      await readFile(
        await makeVideo(dir, { codec: "h264", width: 48, height: 32, frames: 12, gop: 4, bframes: 2, name: "c.mp4" }),
      ),
    ],
  ]);
  videos.set("ds/v/broken.mp4", videos.get("ds/v/a.mp4")!.slice(0, 3000));
  const cheap = Array.from({ length: 60 }, (_, i) => ({
    key: `ds/o/${String(i).padStart(3, "0")}.bin`,
    body: `o${i}`,
  }));
  for (const bucket of [ONE, SHARDED]) {
    for (const [key, bytes] of videos) await s3.put(key, bytes, bucket);
    await s3.seed(cheap, bucket);
  }
  await ensureBuilt();
}, 300_000);

afterAll(async () => {
  holding = undefined;
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("ec index s3://… --shard I/N and --publish", () => {
  it("refuses a --shard outside [0, N) or N < 1, before any request", async () => {
    const before = s3.requests;
    for (const bad of ["4/4", "0/0", "1", "-1/4", "a/b"]) {
      const out = await ec(flags(SHARDED, `--shard=${bad}`), env());
      expect(out.code).toBe(2);
      expect(out.stderr).toContain("[ERR_INVALID_OPTION] Expected --shard I/N with N >= 1 and I from 0 to N - 1");
      expect(out.stderr).toContain(bad);
    }
    expect(s3.requests).toBe(before);
  });

  it("four shards, one killed mid-way and rerun alone, publish the table one machine builds", async () => {
    const one = await ec(flags(ONE), env());
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ shard: 0, of: 1, publish: { generation: 1, published: true } });

    // The shard to kill: the one with the most chunks (at least two, so it dies with work left).
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: SHARDED, Prefix: "ds/" }));
    const cut = chunker("ds", Number(TARGET));
    const chunks = [
      ...cut.push((listed.Contents ?? []).map((o) => ({ key: o.Key!, etag: o.ETag!, size: o.Size! }))),
      ...cut.flush(),
    ];
    const owned = Array.from({ length: N }, (_, s) => chunks.filter((c) => chunkShard(c, N) === s).length);
    expect(owned.every((n) => n > 0)).toBe(true);
    const victim = owned.indexOf(Math.max(...owned));
    expect(owned[victim]).toBeGreaterThanOrEqual(2);

    // Once its first chunk record is stored, its reads of objects and its writes wait for ever.
    let recorded = false;
    let held = 0;
    const never = new Promise<void>(() => {});
    holding = (r) => {
      if (!r.path.startsWith(`/${SHARDED}/`)) return undefined;
      const work = r.method === "PUT" || r.path.startsWith(`/${SHARDED}/ds/`);
      if (recorded && work) {
        held++;
        return never;
      }
      if (r.method === "PUT" && r.path.includes("/build/chunks/")) recorded = true;
      return undefined;
    };
    const child = ecSpawn(flags(SHARDED, "--shard", `${victim}/${N}`), env());
    const exited = new Promise<number | null>((resolve) =>
      child.once("exit", (_code, signal) => resolve(signal ? -1 : _code)),
    );
    while ((await keys(SHARDED, "_ec/table/v1/ds/build/chunks/")).length === 0 || held === 0)
      await new Promise((r) => setTimeout(r, 50));
    process.kill(-child.pid!, "SIGKILL");
    expect(await exited).toBe(-1);
    holding = undefined;
    const recordedBefore = (await keys(SHARDED, "_ec/table/v1/ds/build/chunks/")).length;
    expect(recordedBefore).toBeGreaterThanOrEqual(1);
    expect(recordedBefore).toBeLessThan(owned[victim]!);

    const others = await Promise.all(
      Array.from({ length: N }, (_, s) => s)
        .filter((s) => s !== victim)
        .map((s) => ec(flags(SHARDED, "--shard", `${s}/${N}`), env())),
    );
    for (const out of others) {
      expect(out.code, out.stderr).toBe(0);
      const summary = JSON.parse(out.stdout) as { publish?: unknown; skipped: number };
      expect(summary.publish).toBeUndefined();
      expect(summary.skipped).toBe(0);
    }

    // Publishing now is refused, naming the killed shard alone; no head is written.
    const early = await ec(flags(SHARDED, "--publish"), env());
    expect(early.code).toBe(1);
    expect(early.stderr).toContain("[ERR_INDEX_SHARDS_INCOMPLETE]");
    expect(early.stderr).toContain(`--shard ${victim}/${N}\``);
    for (let s = 0; s < N; s++) if (s !== victim) expect(early.stderr).not.toContain(`--shard ${s}/${N}`);
    expect(await keys(SHARDED, tableKeys.head("ds"))).toEqual([]);

    // The rerun skips the chunk recorded before the kill, indexes the rest and, last, publishes.
    const rerun = await ec(flags(SHARDED, "--shard", `${victim}/${N}`), env());
    expect(rerun.code, rerun.stderr).toBe(0);
    const summary = JSON.parse(rerun.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ mine: owned[victim], skipped: recordedBefore, finished: N });
    expect(summary.indexed).toBe(owned[victim]! - recordedBefore);
    expect(summary.publish).toMatchObject({ generation: 1, published: true });

    const single = await table(ONE);
    const sharded = await table(SHARDED);
    expect(sharded.entries.length).toBe(64);
    expect(sharded.entries).toEqual(single.entries);
    expect(sharded.pages).toEqual(single.pages);
    expect(sharded.objects).toBe(single.objects);
    // Each shard's pages store their shards at the target the publish cut them at.
    expect(sharded.sharded.length).toBeGreaterThan(1);
    expect(sharded.sharded.every(Boolean)).toBe(true);
    expect(sharded.entries.filter((e) => e.kind === "video").map((e) => e.frames)).toEqual([24, 16, 12]);

    // A completed shard's rerun does no index work, and a publish with nothing new writes nothing.
    const again = await ec(flags(SHARDED, "--shard", `${victim}/${N}`), env());
    expect(JSON.parse(again.stdout)).toMatchObject({ indexed: 0, objectsIndexed: 0, skipped: owned[victim] });
    const republish = await ec(flags(SHARDED, "--publish"), env());
    expect(JSON.parse(republish.stdout)).toMatchObject({ generation: 1, published: false });

    // An object added within a chunk: that chunk alone is indexed again (by any N), its other
    // objects' entries kept from its previous record by key and ETag.
    const before = chunks.map((c) => c.objects[0]!.key);
    const added = Array.from({ length: 40 }, (_, i) => `ds/o/${String(i).padStart(3, "0")}x.bin`).find((key) => {
      const cut = chunker("ds", Number(TARGET));
      const listing = (listed.Contents ?? []).map((o) => ({ key: o.Key!, etag: o.ETag!, size: o.Size! }));
      listing.push({ key, etag: '"0"', size: 1 });
      listing.sort((a, b) => (a.key < b.key ? -1 : 1));
      const after = [...cut.push(listing), ...cut.flush()].map((c) => c.objects[0]!.key);
      return after.length === before.length && after.every((k, i) => k === before[i]);
    })!;
    await s3.put(added, "new", SHARDED);
    const grown = await ec(flags(SHARDED), env());
    expect(grown.code, grown.stderr).toBe(0);
    expect(JSON.parse(grown.stdout)).toMatchObject({
      indexed: 1,
      objectsIndexed: 1,
      skipped: chunks.length - 1,
      publish: { generation: 2, published: true },
    });
    const regrown = await table(SHARDED);
    expect(regrown.entries.map((e) => e.key)).toEqual([...single.entries.map((e) => e.key), added].sort());
    expect(regrown.entries.filter((e) => e.key !== added)).toEqual(single.entries);

    // Readers plan from it as from an edge's table: signed, verified, every object listed.
    const source = await openS3Source(new URL(`s3://${SHARDED}/ds`), {
      endpoint: s3.endpoint,
      region: s3.region,
      credentials: s3.credentials,
      forcePathStyle: true,
      indexCacheDir: join(dir, "reader"),
      knownEdges: join(dir, "known-edges.json"),
    });
    try {
      const listing = await source.list();
      expect(listing.generation).toBe(2);
      expect(listing.objects.length).toBe(65);
      expect(source.counters().indexMisses).toBe(0);
    } finally {
      await source.close();
    }
  }, 300_000);
});
