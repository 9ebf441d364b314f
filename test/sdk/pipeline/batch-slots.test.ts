/**
 * Clips decoded straight into their batch's memory: a batch whose clips lie in their slots in
 * order is a view of that memory (no copy); released batches' memory carries later clips; kept
 * batches are never overwritten, overlapping GOP-run clips included. Real decode of ffmpeg-made
 * video; every frame checked against a plain native decode of the whole file.
 */
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, bytesReader } from "../../../common/media-index/index.js";
import { createDecoder, frameBytes, packetsFromTrack, type HostFrame } from "../../../native/index.js";
import { ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open, type Batch } from "../../../sdk/index.js";

const SIZE: [number, number] = [24, 32];
let dir: string;
/** md5 of every rgb24 frame at SIZE, per file, in presentation order. */
let md5s: Map<string, string[]>;
/** ffmpeg's framemd5 of every frame, per file. */
let native: Map<string, string[]>;

const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

async function reference(file: string): Promise<string[]> {
  const bytes = new Uint8Array(await readFile(file));
  const track = (await buildIndex(bytesReader(bytes), { key: file, etag: "t" })).video!;
  const d = await createDecoder({
    codec: track.codec,
    extradata: track.extradata,
    width: track.width,
    height: track.height,
    threads: 1,
    output: "rgb24",
    resize: SIZE,
  });
  const frames = (await d.decode(packetsFromTrack(track, bytes, 0, 0, track.samples.size.length))) as HostFrame[];
  await d.close();
  return frames.map((f) => md5(frameBytes(f)));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-batch-slots-"));
  md5s = new Map();
  native = new Map();
  for (const name of ["a.mp4", "b.mp4"]) {
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 60, gop: 20, bframes: 2, name });
    md5s.set(name, await reference(join(dir, name)));
    native.set(name, await ffmpegFrameMd5s(join(dir, name)));
  }
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const OPTIONS = { frames: 4, batch: 3, format: "rgb24" as const, size: SIZE, device: "cpu", seed: 5 };
const FRAME = SIZE[0] * SIZE[1] * 3;

/** Every frame of the batch tensor against the reference decode; returns how many. */
function expectFrames(b: Batch): number {
  const { data } = b.frames;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let n = 0;
  b.clips.forEach((c, i) => {
    for (let t = 0; t < c.frames; t++) {
      const at = (i * c.frames + t) * FRAME;
      expect(md5(bytes.subarray(at, at + FRAME)), `${c.key} frame ${c.start + t}`).toBe(
        md5s.get(c.key)![c.start + t * c.stride],
      );
      n++;
    }
  });
  return n;
}

/** The tensor is a view of the memory the decoder wrote the clips into: nothing was stacked. */
const isPlaced = (b: Batch) => b.frames.data.buffer === b.decoded[0]!.frames[0]!.data.buffer;

describe("clips decoded into batch memory", () => {
  it("hands out batches that are views of the decoded frames, and reuses them once released", async () => {
    // Three clips ahead: one batch being decoded while the consumer holds another.
    const ds = await open(dir, { ...OPTIONS, prefetch: 3 });
    const buffers: ArrayBufferLike[] = [];
    let frames = 0;
    for await (const b of ds) {
      expect(isPlaced(b)).toBe(true);
      frames += expectFrames(b);
      buffers.push(b.frames.data.buffer);
      b.release();
      expect(() => b.frames).toThrow(expect.objectContaining({ code: "ERR_BATCH_RELEASED" }));
    }
    expect(frames).toBe(ds.stats().frames);
    expect(buffers.length).toBeGreaterThan(8);
    // Released memory carries later batches: a few buffers serve the whole epoch.
    expect(new Set(buffers).size).toBeLessThan(buffers.length / 2);
  });

  it("never overwrites batches the consumer keeps", async () => {
    const ds = await open(dir, OPTIONS);
    const kept: { batch: Batch; hash: string }[] = [];
    let i = 0;
    for await (const b of ds) {
      if (i++ % 2 === 0) kept.push({ batch: b, hash: md5(b.frames.data as Uint8Array) });
      else b.frames, b.release();
    }
    expect(kept.length).toBeGreaterThan(4);
    expect(new Set(kept.map((k) => k.batch.frames.data.buffer)).size).toBe(kept.length);
    for (const k of kept) {
      expect(md5(k.batch.frames.data as Uint8Array)).toBe(k.hash);
      expectFrames(k.batch);
    }
  });

  it("places native frames too once the first clip told their size, frame-exact", async () => {
    const ds = await open(dir, { ...OPTIONS, format: "native", size: undefined, prefetch: 3 });
    const placed: boolean[] = [];
    for await (const b of ds) {
      placed.push(isPlaced(b));
      const { data, shape } = b.frames;
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      const frameBytes = shape[2]!;
      b.clips.forEach((c, i) => {
        for (let t = 0; t < c.frames; t++) {
          const at = (i * c.frames + t) * frameBytes;
          expect(md5(bytes.subarray(at, at + frameBytes)), `${c.key} frame ${c.start + t}`).toBe(
            native.get(c.key)![c.start + t * c.stride],
          );
        }
      });
      b.release();
    }
    // Clips started before the first one came back had no size to go by: a batch or two.
    expect(placed.slice(2).every(Boolean)).toBe(true);
  });

  it("keeps later batches views after a filtered-out clip: the clips after it move up one slot", async () => {
    // One clip in flight at a time: the filter's verdict is known before the next clip takes its slot.
    for (const prefetch of [1, 8]) {
      const ds = await open(dir, { ...OPTIONS, prefetch, filter: (c) => c.position !== 1 });
      const placed: boolean[] = [];
      let frames = 0;
      for await (const b of ds) {
        frames += expectFrames(b);
        placed.push(isPlaced(b));
        b.release();
      }
      expect(frames).toBe(ds.stats().frames);
      expect(placed.length).toBeGreaterThan(8);
      const stacked = placed.filter((p) => !p).length;
      if (prefetch === 1) expect(stacked).toBe(0);
      // Clips already decoding when the verdict came kept the places they took: their batches are stacked.
      else expect(stacked).toBeLessThanOrEqual(1 + Math.ceil(prefetch / OPTIONS.batch));
    }
  });

  it("never writes a moved-up clip over frames a GOP run still holds in a filtered-out clip's slot", async () => {
    // hop 2 < frames 4: the clip after a filtered one finds its first frames in the filtered clip's slot.
    const ds = await open(dir, { ...OPTIONS, hop: 2, filter: (c) => c.position % 5 !== 1 });
    let frames = 0;
    for await (const b of ds) {
      frames += expectFrames(b);
      b.release();
    }
    expect(frames).toBe(ds.stats().frames);
    expect(frames).toBeGreaterThan(80);
  });

  it("keeps overlapping clips of one GOP run exact while earlier batches are released", async () => {
    // hop 2 < frames 4: a clip's first frames were decoded into the previous clip's slot.
    const ds = await open(dir, { ...OPTIONS, hop: 2 });
    let frames = 0;
    for await (const b of ds) {
      frames += expectFrames(b);
      for (const d of b.decoded) for (const f of d.frames) expect(f.data.byteLength).toBe(FRAME);
      b.release();
    }
    expect(frames).toBe(ds.stats().frames);
    expect(frames).toBeGreaterThan(100);
    // Each frame is decoded about once though clips share half their frames: no run restarted
    // for a frame it had let go too early.
    expect(ds.stats().decoded_frames).toBeLessThan(0.6 * frames);
  });
});
