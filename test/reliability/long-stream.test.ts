/**
 * A long stream: thousands of one-frame clips over several epochs through an origin-cache a
 * fraction of the dataset's size. The cache directory and this process's RSS are sampled the
 * whole time and stay within their bounds; every frame is md5-checked against ffmpeg.
 */
import { createHash } from "node:crypto";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import { open, type SdkError } from "../../sdk/index.js";
import { bytesOf, report, scale, startStack, type Stack } from "./stack.js";

const copies = scale(10, 40);
const epochs = scale(2, 3);
const CACHE_BYTES = 64 << 10;
let stack: Stack;
let svc: CacheService;
let cacheDir: string;
let datasetBytes = 0;

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name)).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

beforeAll(async () => {
  // Every frame a keyframe: one clip per frame, so a small dataset makes thousands of clips.
  stack = await startStack({ k: { codec: "h264", width: 32, height: 32, frames: 48, gop: 1, name: "k.mp4" } });
  const body = await bytesOf(stack.videos.get("k")!);
  for (let i = 0; i < copies; i++) expect(await stack.put(`long/k-${String(i).padStart(3, "0")}.mp4`, body)).toBe(201);
  datasetBytes = body.byteLength * copies;
  cacheDir = await mkdtemp(join(tmpdir(), "ec-rel-long-"));
  svc = await startCache({
    upstreams: [stack.edge.url],
    dir: cacheDir,
    maxBytes: CACHE_BYTES,
    blockSize: 16 << 10,
    logLevel: "silent",
  });
}, 240_000);

afterAll(async () => {
  await svc?.close();
  await stack?.close();
  if (cacheDir) await rm(cacheDir, { recursive: true, force: true });
});

it("thousands of clips over several epochs: RSS and the cache directory stay bounded, every frame exact", async () => {
  expect(datasetBytes).toBeGreaterThan(2 * CACHE_BYTES);
  const want = stack.md5s.get("k")!;
  const rss: number[] = [];
  const disk: number[] = [];
  let clips = 0;
  let batches = 0;
  const errors: SdkError[] = [];
  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  for (let epoch = 0; epoch < epochs; epoch++) {
    const ds = await open(`${stack.edge.url}/v1/datasets/long`, {
      token: stack.edge.token,
      cache: svc.url,
      epoch,
      seed: 1,
      device: "cpu",
      format: "native",
      frames: 1,
      batch: 16,
      onError: (e) => errors.push(e),
    });
    try {
      for await (const b of ds) {
        b.decoded.forEach((clip, i) => {
          expect(createHash("md5").update(clip.frames[0]!.data).digest("hex")).toBe(want[b.clips[i]!.start]);
        });
        clips += b.clips.length;
        if (++batches % 4 === 0) {
          rss.push(process.memoryUsage().rss);
          disk.push(await dirBytes(cacheDir));
        }
      }
    } finally {
      await ds.close();
    }
  }
  expect(errors.map((e) => e.code)).toEqual([]);
  expect(clips).toBe(48 * copies * epochs);
  const peakDisk = Math.max(...disk);
  const rssGrowth = Math.max(...rss) - rss0;
  // The block store's bound covers its files; the directory adds only its folders' entries.
  expect(peakDisk).toBeLessThanOrEqual(CACHE_BYTES + 64 * 4096);
  expect(rssGrowth).toBeLessThan(256 << 20);
  report("long-stream", {
    clips,
    epochs,
    objects: copies,
    dataset_bytes: datasetBytes,
    cache_bytes: CACHE_BYTES,
    samples: rss.length,
    peak_cache_dir_bytes: peakDisk,
    rss_growth_mib: Math.round(rssGrowth / 2 ** 20),
    last_rss_mib: Math.round(rss.at(-1)! / 2 ** 20),
    evictions: svc.stats().evictions,
  });
}, 600_000);
