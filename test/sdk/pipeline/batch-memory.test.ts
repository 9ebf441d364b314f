/**
 * Reused batch memory: a released batch's buffer carries a later batch; a kept one is never
 * overwritten. Real decode of ffmpeg-made video, every frame checked against ffmpeg's framemd5.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open, type Batch } from "../../../sdk/index.js";
import { BatchPool } from "../../../sdk/pipeline/batch-pool.js";

let dir: string;
let md5s: Map<string, string[]>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-batch-memory-"));
  for (const name of ["a.mp4", "b.mp4"])
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 60, gop: 20, bframes: 2, name });
  md5s = new Map([
    ["a.mp4", await ffmpegFrameMd5s(join(dir, "a.mp4"))],
    ["b.mp4", await ffmpegFrameMd5s(join(dir, "b.mp4"))],
  ]);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const OPTIONS = { frames: 4, batch: 3, format: "native", device: "cpu", seed: 5 } as const;

/** Every frame of the stacked tensor against ffmpeg's md5 of that frame; returns how many. */
function expectStackedFrames(b: Batch): number {
  const { data, shape } = b.frames;
  const frameBytes = shape[2]!;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let n = 0;
  b.clips.forEach((c, i) => {
    for (let t = 0; t < c.frames; t++) {
      const at = (i * c.frames + t) * frameBytes;
      const md5 = createHash("md5")
        .update(bytes.subarray(at, at + frameBytes))
        .digest("hex");
      expect(md5, `${c.key} frame ${c.start + t}`).toBe(md5s.get(c.key)![c.start + t * c.stride]);
      n++;
    }
  });
  return n;
}

const hashOf = (b: Batch) =>
  createHash("md5")
    .update(b.frames.data as Uint8Array)
    .digest("hex");

describe("batch memory", () => {
  it("never overwrites batches the consumer keeps", async () => {
    const ds = await open(dir, OPTIONS);
    const kept: { batch: Batch; hash: string }[] = [];
    for await (const b of ds) kept.push({ batch: b, hash: hashOf(b) });
    expect(kept.length).toBeGreaterThan(3);
    // Each kept batch has memory of its own and still holds what it was handed with.
    expect(new Set(kept.map((k) => k.batch.frames.data.buffer)).size).toBe(kept.length);
    let frames = 0;
    for (const k of kept) {
      expect(hashOf(k.batch)).toBe(k.hash);
      frames += expectStackedFrames(k.batch);
    }
    expect(frames).toBe(ds.stats().frames);
  });

  it("reuses a released batch's memory for a later batch, frames still exact", async () => {
    const ds = await open(dir, OPTIONS);
    const buffers: ArrayBufferLike[] = [];
    let frames = 0;
    for await (const b of ds) {
      frames += expectStackedFrames(b);
      buffers.push(b.frames.data.buffer);
      b.release();
      expect(() => b.frames).toThrow(expect.objectContaining({ code: "ERR_BATCH_RELEASED" }));
      b.release(); // twice is harmless
    }
    expect(frames).toBe(ds.stats().frames);
    // Clips are decoded into batch buffers ahead of the consumer: the one it holds plus those
    // the prefetched clips (8 by default, batches of 3) are written into serve the whole epoch.
    expect(buffers.length).toBeGreaterThan(6);
    expect(new Set(buffers).size).toBeLessThanOrEqual(2 + Math.ceil(8 / OPTIONS.batch));
  });

  it("takes batch memory only for clips a decoder writes, not for every clip prefetch schedules", async () => {
    // Buffers out of the pool at once: fresh ones are zero-filled by the kernel on first touch
    // (the engine's are shared-memory slot files), so the peak is the stream's working set.
    let out = 0;
    let peak = 0;
    class CountingPool extends BatchPool {
      override take(bytes: number): ArrayBuffer {
        peak = Math.max(peak, ++out);
        return super.take(bytes);
      }
      override give(buffer: ArrayBuffer): void {
        out--;
        super.give(buffer);
      }
    }
    const prefetch = 16;
    const ds = await open(
      dir,
      { ...OPTIONS, batch: 1, prefetch, workers: 1 },
      { batchPool: (maxFree) => new CountingPool(maxFree) },
    );
    let frames = 0;
    for await (const b of ds) {
      frames += expectStackedFrames(b);
      b.release();
    }
    expect(frames).toBe(ds.stats().frames);
    expect(ds.stats().clips).toBeGreaterThan(prefetch);
    // One decoder writes one clip at a time, in delivery order, and the consumer holds one more;
    // a clip whose read comes late lets later ones decode ahead of it, so a few more at times. Taken
    // when a clip was scheduled, every clip `prefetch` keeps in flight held a buffer at once.
    expect(peak).toBeLessThanOrEqual(prefetch / 2);
  });

  it("keeps the batches kept among released ones intact", async () => {
    const ds = await open(dir, OPTIONS);
    const kept: { batch: Batch; hash: string }[] = [];
    let i = 0;
    for await (const b of ds) {
      if (i++ % 2 === 0) kept.push({ batch: b, hash: hashOf(b) });
      else b.frames, b.release();
    }
    for (const k of kept) {
      expect(hashOf(k.batch)).toBe(k.hash);
      expectStackedFrames(k.batch);
    }
  });

  it("lends the smallest free buffer that fits, never one twice its need", () => {
    const pool = new BatchPool(2);
    const big = pool.take(1000);
    const small = pool.take(400);
    pool.give(big);
    pool.give(small);
    pool.give(pool.take(10)); // fits neither without pinning it: a new one, dropped at the bound
    expect(pool.take(300)).toBe(small);
    expect(pool.take(900)).toBe(big);
    expect(pool.take(900)).not.toBe(big);
  });
});
