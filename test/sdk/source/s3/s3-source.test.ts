import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listedObjects } from "../../../../sdk/source/source.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, bytesReader } from "../../../../common/media-index/index.js";
import { openS3Source, S3ErrorCode, type S3Source } from "../../../../sdk/source/s3/index.js";
import { makeVideo, probePackets } from "../../../helpers/make-video.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

let s3: S3TestServer;
let dir: string;
const files = new Map<string, string>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-s3-source-"));
  s3 = await startS3Server();
  const made = await Promise.all([
    makeVideo(dir, { codec: "h264", width: 480, height: 272, frames: 90, bframes: 2 }),
    makeVideo(dir, { codec: "h264", width: 128, height: 72, frames: 30, faststart: true }),
  ]);
  for (const [i, file] of made.entries()) {
    const key = `clips/${i}.mp4`;
    files.set(key, file);
    await s3.put(key, await readFile(file));
  }
  await s3.put("clips/notes/", ""); // a console-made "folder" marker
  await s3.put("other/outside.mp4", "not part of the dataset");
});

afterAll(async () => {
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

async function open(prefix = "clips", extra: { indexCacheDir?: string } = {}): Promise<S3Source> {
  return openS3Source(
    new URL(`s3://${s3.bucket}/${prefix}`),
    {
      endpoint: s3.endpoint,
      region: s3.region,
      credentials: s3.credentials,
      indexCacheDir: extra.indexCacheDir ?? join(dir, "index-cache"),
    },
    {},
  );
}

describe("S3Source against a real S3-compatible server", () => {
  it("lists the prefix only, with sizes and ETags, without folder markers", async () => {
    const source = await open();
    try {
      const listing = await source.list();
      const objects = listedObjects(listing.objects);
      const shards = listing.shards;
      expect(objects.map((o) => o.key)).toEqual(["clips/0.mp4", "clips/1.mp4"]);
      for (const o of objects) {
        expect(o.size).toBe((await readFile(files.get(o.key)!)).length);
        expect(o.etag).toMatch(/^"[0-9a-f]{32}"$/);
        expect(o.kind).toBe("video");
      }
      expect(shards.flatMap((s) => s.objects)).toEqual([0, 1]);
    } finally {
      await source.close();
    }
  });

  it("reads byte-exact ranges through presigned GETs", async () => {
    const source = await open();
    try {
      const objects = listedObjects((await source.list()).objects);
      const object = objects[0]!;
      const local = await readFile(files.get(object.key)!);
      for (const [offset, length] of [
        [0, 1],
        [7, 1000],
        [local.length - 333, 333],
        [0, local.length],
      ] as const) {
        expect(
          Buffer.from(await source.read(object, offset, length)).equals(local.subarray(offset, offset + length)),
        ).toBe(true);
      }
    } finally {
      await source.close();
    }
  });

  it("indexes each object from range reads, matching the local file's index and ffprobe, never reading the whole object", async () => {
    const cacheDir = join(dir, "index-fresh");
    const source = await open("clips", { indexCacheDir: cacheDir });
    try {
      const objects = await source.objects();
      let large = 0;
      for (const object of objects) {
        const before = source.counters().indexBytes;
        const index = await source.index(object);
        const fetched = source.counters().indexBytes - before;
        const local = await readFile(files.get(object.key)!);
        expect(index).toEqual(await buildIndex(bytesReader(local), { key: object.key, etag: object.etag }));
        expect(index.kind).toBe("video");
        const packets = await probePackets(files.get(object.key)!);
        expect(Array.from(index.video!.samples.offset)).toEqual(packets.map((p) => p.pos));
        expect(Array.from(index.video!.samples.size)).toEqual(packets.map((p) => p.size));
        // Objects below the indexer's 64 KiB head read are fetched whole; larger ones only in part.
        if (local.length > 3 * 65536) {
          large++;
          expect(fetched).toBeLessThan(local.length / 2);
        }
      }
      expect(large).toBeGreaterThan(0);
      expect(source.counters()).toMatchObject({ indexHits: 0, indexMisses: 2 });
      // Header reads go around the byte cache.
      expect(source.stats().bytesFetched).toBe(0);
    } finally {
      await source.close();
    }
  });

  it("keeps indexes on disk keyed by ETag: a second run reads no header bytes", async () => {
    const cacheDir = join(dir, "index-reuse");
    const first = await open("clips", { indexCacheDir: cacheDir });
    const objects = listedObjects((await first.list()).objects);
    const built = await Promise.all(objects.map((o) => first.index(o)));
    await first.close();
    expect((await readdir(cacheDir)).filter((n) => n.endsWith(".idx"))).toHaveLength(2);

    const second = await open("clips", { indexCacheDir: cacheDir });
    try {
      const again = await Promise.all(objects.map((o) => second.index(o)));
      expect(again).toEqual(built);
      expect(second.counters()).toMatchObject({ indexHits: 2, indexMisses: 0, indexRequests: 0 });
    } finally {
      await second.close();
    }
  });

  it("reports an object overwritten after listing as ERR_ETAG_CHANGED, never mixed bytes", async () => {
    // Larger than one in-process cache block, so a later range must go back to the bucket.
    const size = 1 << 20;
    await s3.put("changing/a.bin", new Uint8Array(size).fill(1));
    const source = await open("changing");
    try {
      const [object] = await source.objects();
      expect(Buffer.from(await source.read(object!, 100, 10)).every((b) => b === 1)).toBe(true);
      await s3.put("changing/a.bin", new Uint8Array(size).fill(2));
      await expect(source.read(object!, size - 10, 10)).rejects.toMatchObject({ code: S3ErrorCode.OBJECT_CHANGED });
      await expect(source.index(object!)).rejects.toThrow(/changed since it was listed/);
    } finally {
      await source.close();
    }
  });

  it("reports an object deleted after listing as ERR_S3_OBJECT_NOT_FOUND", async () => {
    await s3.put("vanishing/a.bin", "abc");
    const source = await open("vanishing");
    try {
      const object = (await source.list()).objects.at(0);
      const { DeleteObjectCommand } = await import("@aws-sdk/client-s3");
      await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: "vanishing/a.bin" }));
      await expect(source.read(object!, 0, 3)).rejects.toMatchObject({ code: S3ErrorCode.OBJECT_NOT_FOUND });
    } finally {
      await source.close();
    }
  });
});
