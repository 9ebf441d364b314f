import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startCache, type CacheService } from "../../../../origin-cache/index.js";
import { open, type OpenOptions, type SdkError } from "../../../../sdk/index.js";
import { listedObjects } from "../../../../sdk/source/source.js";
import { bucketUpstream, parseBucketUrl, S3Bucket } from "../../../../sdk/source/s3/index.js";
import type { S3TestServer } from "../../../helpers/s3-server.js";
import { expectFramesMatch } from "../../../helpers/ffmpeg-md5.js";
import { type S3Videos, startS3Videos } from "../../../helpers/s3-videos.js";

let fixture: S3Videos;
let s3: S3TestServer;
let dataset: string;
let expectedMd5: ReadonlyMap<string, string[]>;

function bucketOptions(): OpenOptions {
  return { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials, device: "cpu" };
}

beforeAll(async () => {
  fixture = await startS3Videos(
    "ec-s3-stream-",
    {
      "e2e/a.mp4": { codec: "h264", width: 96, height: 64, frames: 36, gop: 6, bframes: 2 },
      "e2e/sub/b.mp4": { codec: "hevc", width: 64, height: 48, frames: 24, gop: 8, faststart: true },
    },
    { truncated: { key: "e2e/broken.mp4", of: "e2e/a.mp4", bytes: 3000 } },
  );
  vi.stubEnv("EC_INDEX_CACHE_DIR", join(fixture.dir, "index-cache"));
  s3 = fixture.s3;
  dataset = `s3://${s3.bucket}/e2e`;
  expectedMd5 = fixture.md5s;
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await fixture?.close();
});

async function checkFrames(
  options: OpenOptions,
): Promise<{ frames: number; errors: SdkError[]; stats: ReturnType<Awaited<ReturnType<typeof open>>["stats"]> }> {
  const errors: SdkError[] = [];
  const ds = await open(dataset, {
    ...bucketOptions(),
    frames: 3,
    stride: 2,
    align: "exact",
    format: "native",
    batch: 4,
    onError: (e) => errors.push(e),
    ...options,
  });
  let frames = 0;
  try {
    for await (const b of ds) {
      frames += expectFramesMatch(b, (key) => expectedMd5.get(key)!);
    }
  } finally {
    await ds.close();
  }
  return { frames, errors, stats: ds.stats() };
}

describe("open(s3://…) straight from the bucket", () => {
  it("delivers every frame byte-equal to ffmpeg's decode of the local file, and skips the corrupt object", async () => {
    const { frames, errors, stats } = await checkFrames({});
    // Tiled clips of span 5: 36 frames → 7 clips, 24 → 4.
    expect(frames).toBe((7 + 4) * 3);
    expect(errors.map((e) => [e.code, e.message.split(":")[0]])).toEqual([["ERR_TRUNCATED", "e2e/broken.mp4"]]);
    expect(stats.bytes_fetched).toBeGreaterThan(0);
  });

  it("streams the same frames through an origin-cache service whose upstream is the bucket", async () => {
    const location = parseBucketUrl(new URL(dataset), bucketOptions(), {});
    const bucket = new S3Bucket(location, s3.credentials);
    const upstream = await bucketUpstream(bucket);
    bucket.destroy();
    expect(upstream).toBe(`${s3.endpoint}/${s3.bucket}/`);
    const cacheDir = await mkdtemp(join(tmpdir(), "ec-s3-cache-"));
    let svc: CacheService | undefined;
    try {
      svc = await startCache({
        upstreams: [upstream],
        dir: cacheDir,
        maxBytes: 64 << 20,
        blockSize: 64 << 10,
        logLevel: "silent",
      });
      const first = await checkFrames({ cache: svc.url });
      expect(first.frames).toBe((7 + 4) * 3);
      expect(first.stats.bytes_fetched).toBeGreaterThan(0);
      // Presigned URLs differ per signing, the object does not: the second pass is all hits.
      const second = await checkFrames({ cache: svc.url, epoch: 1 });
      expect(second.frames).toBe(first.frames);
      expect(second.stats.bytes_fetched).toBe(0);
      expect(second.stats.cache_hit_ratio).toBe(1);

      // An object overwritten behind the service's back is an ERR_ETAG_CHANGED there too.
      await s3.put("e2e/changing.bin", new Uint8Array(1 << 20).fill(1));
      const { openS3Source } = await import("../../../../sdk/source/s3/index.js");
      const source = await openS3Source(
        new URL(dataset),
        { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials, cache: svc.url },
        {},
      );
      try {
        const object = listedObjects((await source.list()).objects).find((o) => o.key === "e2e/changing.bin")!;
        expect(Buffer.from(await source.read(object, 0, 16)).every((b) => b === 1)).toBe(true);
        await s3.put("e2e/changing.bin", new Uint8Array(1 << 20).fill(2));
        await expect(source.read(object, (1 << 20) - 16, 16)).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
      } finally {
        await source.close();
        await s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: "e2e/changing.bin" }));
      }
    } finally {
      await svc?.close();
      await rm(cacheDir, { recursive: true, force: true });
    }
  });
});
