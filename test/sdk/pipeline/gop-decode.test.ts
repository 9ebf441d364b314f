import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open, type OpenOptions } from "../../../sdk/index.js";
import { nativeDecoders } from "../../../sdk/pipeline/native-decode.js";
import { GOP_INTERLEAVE } from "../../../sdk/sampler/shuffle.js";
import { LocalDirSource } from "../../../sdk/source/local-dir.js";
import type { DatasetObject, PlannedRange } from "../../../sdk/source/source.js";

let dir: string;
const md5s = new Map<string, string[]>();
/** Frames in the fixture videos, all of them. */
const FRAMES = 120 + 90 + 60;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-gop-"));
  await makeVideo(dir, { codec: "h264", width: 96, height: 64, frames: 120, gop: 60, bframes: 3, name: "a.mp4" });
  await makeVideo(dir, { codec: "h264", width: 96, height: 64, frames: 90, gop: 45, bframes: 2, name: "b.mp4" });
  await makeVideo(dir, { codec: "hevc", width: 96, height: 64, frames: 60, gop: 30, bframes: 2, name: "c.mp4" });
  for (const k of ["a.mp4", "b.mp4", "c.mp4"]) md5s.set(k, await ffmpegFrameMd5s(join(dir, k)));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function stream(options: OpenOptions, parts: Parameters<typeof open>[2] = {}) {
  const ds = await open(dir, { format: "native", device: "cpu", workers: 2, ...options }, parts);
  let checked = 0;
  const clips: string[] = [];
  for await (const b of ds) {
    checked += expectFramesMatch(b, (key) => md5s.get(key));
    for (const c of b.clips) clips.push(`${c.key}@${c.start}`);
  }
  return { ds, checked, clips, stats: ds.stats() };
}

describe("GOP-coherent decode", () => {
  it("cuts exact-aligned clips of one GOP from one decode: ffmpeg's frames, decoded_frames near frames", async () => {
    const { checked, stats, ds } = await stream({ frames: 8, align: "exact", batch: 4 });
    // 15 + 11 + 7 clips of 8 frames.
    expect(ds.clipCount).toBe(33);
    expect(checked).toBe(33 * 8);
    expect(stats.frames).toBe(33 * 8);
    expect(stats.decoded_frames).toBeGreaterThanOrEqual(stats.frames);
    expect(stats.decoded_frames / stats.frames).toBeLessThanOrEqual(1.15);
  });

  it("decodes each clip from its keyframe without runs, and decoded_frames shows the cost", async () => {
    const { checked, stats } = await stream({ frames: 8, align: "exact", batch: 4 }, { openRun: false });
    expect(checked).toBe(33 * 8);
    // From the keyframe for every clip: the mean clip sits half a GOP in.
    expect(stats.decoded_frames / stats.frames).toBeGreaterThan(2);
  });

  it("serves overlapping clips (hop below the span) and strides from the frames already decoded", async () => {
    const { checked, stats, ds } = await stream({ frames: 6, stride: 2, hop: 3, align: "exact", batch: 3 });
    expect(checked).toBe(ds.clipCount * 6);
    expect(stats.decoded_frames).toBeLessThanOrEqual(FRAMES * 1.15);
  });

  it("resumes exactly: the two runs deliver every clip once, with ffmpeg's frames", async () => {
    const all = (await stream({ frames: 8, align: "exact", batch: 4, seed: 5 })).clips;
    const first = await open(dir, { frames: 8, align: "exact", batch: 4, seed: 5, format: "native", device: "cpu" });
    const seen: string[] = [];
    let n = 0;
    for await (const b of first) {
      expectFramesMatch(b, (key) => md5s.get(key));
      for (const c of b.clips) seen.push(`${c.key}@${c.start}`);
      if (++n === 3) break;
    }
    const rest = await stream({ frames: 8, align: "exact", batch: 4, resume: first.state() });
    expect([...seen, ...rest.clips]).toEqual(all);
    expect(rest.checked).toBe(rest.clips.length * 8);
  });

  it("scatters a GOP's clips: no batch of 4 is one GOP", async () => {
    const ds = await open(dir, { frames: 8, align: "exact", batch: 4, format: "native", device: "cpu" });
    const gopOf = (key: string, start: number) =>
      `${key}:${Math.floor(start / ({ "a.mp4": 60, "b.mp4": 45, "c.mp4": 30 } as Record<string, number>)[key]!)}`;
    for await (const b of ds) {
      if (b.clips.length < 4) continue;
      expect(new Set(b.clips.map((c) => gopOf(c.key, c.start))).size).toBeGreaterThan(1);
    }
  });
});

describe("GOP runs over many GOPs", () => {
  let many: string;
  let manyMd5s: string[];
  beforeAll(async () => {
    many = await mkdtemp(join(tmpdir(), "ec-gops-"));
    await makeVideo(many, { codec: "h264", width: 96, height: 64, frames: 400, gop: 10, bframes: 2, name: "m.mp4" });
    manyMd5s = await ffmpegFrameMd5s(join(many, "m.mp4"));
  });
  afterAll(() => rm(many, { recursive: true, force: true }));

  it("reads each run's bytes inside the spans its plan asked the cache for, reorder samples included", async () => {
    // What the cache prefetches and the local plane locates ahead is the plan: a read past it (the
    // samples a run offers past its clip's last one) waited on a locate and a pull of its own.
    let current: readonly PlannedRange[] = [];
    const reads: string[] = [];
    const outside: string[] = [];
    class Recording extends LocalDirSource {
      override plan(ranges: readonly PlannedRange[]): void {
        current = ranges;
      }
      override async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
        // Plans are sent asynchronously: give a pending one its turn before judging.
        await new Promise((r) => setImmediate(r));
        const at = `${offset}+${length}`;
        reads.push(at);
        const end = offset + length;
        if (!current.some((r) => r.object.key === object.key && r.offset <= offset && end <= r.offset + r.length))
          outside.push(at);
        return super.read(object, offset, length);
      }
    }
    for (const align of ["keyframe", "exact"] as const) {
      const ds = await open(
        many,
        { frames: 8, align, batch: 4, format: "native", device: "cpu", workers: 2, prefetch: 4 },
        { source: new Recording(many) },
      );
      let checked = 0;
      for await (const b of ds) checked += expectFramesMatch(b, () => manyMd5s);
      expect(checked).toBe(ds.clipCount * 8);
    }
    expect(reads.length).toBeGreaterThan(80);
    expect(outside).toEqual([]);
  });

  it("reuses retired runs' decoders: codecs opened stay within the runs open at once", async () => {
    let opens = 0;
    const natives = nativeDecoders();
    const openRun: typeof natives.openRun = (config) => {
      opens++;
      return natives.openRun(config);
    };
    // Keyframe-aligned clips: each of the 40 GOPs is a run of its own, so runs are retired all along.
    const ds = await open(
      many,
      { frames: 8, align: "keyframe", batch: 4, format: "native", device: "cpu", workers: 2 },
      { openRun },
    );
    let checked = 0;
    for await (const b of ds) checked += expectFramesMatch(b, () => manyMd5s);
    await natives.close();
    expect(checked).toBe(40 * 8);
    // At most 2 × GOP_INTERLEAVE runs decode at once; a run started as another is retired takes its decoder.
    expect(opens).toBeLessThanOrEqual(2 * GOP_INTERLEAVE);
  });

  it("continues a run across the GOP boundaries exact clips straddle: each frame decoded about once", async () => {
    // 25 clips of 16 frames over 10-frame GOPs: every clip straddles one. Restarted at each GOP's
    // keyframe, the 10 … 15-frame lead-ins and the straddled frames decode again (≈ 1.4 a frame).
    const ds = await open(many, { frames: 16, align: "exact", batch: 4, format: "native", device: "cpu", workers: 2 });
    let checked = 0;
    for await (const b of ds) checked += expectFramesMatch(b, () => manyMd5s);
    expect(checked).toBe(25 * 16);
    const { frames, decoded_frames } = ds.stats();
    // Two chained runs (clips 0…303, 304…399): every frame once, but frames 300…303 (the second run
    // opens at keyframe 300) and the reorder delay past each run's last clip (408–412 of 400; 467 before).
    expect(decoded_frames).toBeGreaterThanOrEqual(frames);
    expect(decoded_frames).toBeLessThanOrEqual(frames * 1.05);
  });
});
