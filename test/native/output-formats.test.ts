import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createDecoder } from "../../native/index.js";
import { decodeAll, indexedVideo, type IndexedVideo } from "./helpers.js";

const run = promisify(execFile);
let dir: string;
let video: IndexedVideo;
let hevc10: IndexedVideo;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-out-"));
  video = await indexedVideo(dir, { codec: "h264", width: 160, height: 96, frames: 6, bframes: 2 });
  hevc10 = await indexedVideo(dir, {
    codec: "hevc",
    width: 160,
    height: 96,
    frames: 4,
    pixFmt: "yuv420p10le",
    name: "h10.mp4",
  });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ffmpeg's own rgb24 of every frame, scaled with the same libswscale flags. */
async function ffmpegRgb(file: string, w: number, h: number): Promise<Uint8Array> {
  const { stdout } = await run(
    "ffmpeg",
    ["-v", "error", "-i", file, "-vf", `scale=${w}:${h}:flags=bilinear`, "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
    { encoding: "buffer", maxBuffer: 64 << 20 },
  );
  return new Uint8Array(stdout);
}

function meanAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>, scaleA = 1): number {
  let sum = 0;
  for (let i = 0; i < b.length; i++) sum += Math.abs(a[i]! * scaleA - b[i]!);
  return sum / b.length;
}

describe("output formats", () => {
  it("native frames: packed planes with their layout; 10-bit as Uint16Array in range", async () => {
    const [f] = await decodeAll(video, {});
    expect(f!.format).toBe("yuv420p");
    expect(f!.shape).toEqual([96, 160]);
    expect(f!.planes).toEqual([
      { offset: 0, rowBytes: 160, rows: 96 },
      { offset: 160 * 96, rowBytes: 80, rows: 48 },
      { offset: 160 * 96 + 80 * 48, rowBytes: 80, rows: 48 },
    ]);
    expect(f!.data.byteLength).toBe(160 * 96 * 1.5);
    const [g] = await decodeAll(hevc10, {});
    expect(g!.dtype).toBe("uint16");
    expect(g!.data).toBeInstanceOf(Uint16Array);
    expect(Math.max(...g!.data)).toBeLessThanOrEqual(1023);
    expect(Math.max(...g!.data)).toBeGreaterThan(255);
    // 10-bit to float keeps its own (libswscale float) path; values still in range and close to rgb24.
    const [float] = await decodeAll(hevc10, { output: "rgbf32-planar" });
    const [rgb] = await decodeAll(hevc10, { output: "rgb24" });
    const data = float!.data as Float32Array;
    expect(float!.shape).toEqual([3, 96, 160]);
    expect(Math.min(...data)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...data)).toBeLessThanOrEqual(1);
    expect(Math.abs(data[0]! * 255 - rgb!.data[0]!)).toBeLessThan(8);
  });

  it("all frames of a call share one allocation", async () => {
    const frames = await decodeAll(video, { output: "rgb24" });
    expect(new Set(frames.map((f) => f.data.buffer)).size).toBe(1);
  });

  it("rgb24 is [H, W, 3] and matches ffmpeg's conversion", async () => {
    const frames = await decodeAll(video, { output: "rgb24" });
    expect(frames[0]!.shape).toEqual([96, 160, 3]);
    expect(frames[0]!.dtype).toBe("uint8");
    const ref = await ffmpegRgb(video.file, 160, 96);
    const ours = new Uint8Array(frames.length * 160 * 96 * 3);
    frames.forEach((f, i) => ours.set(f.data as Uint8Array, i * f.data.length));
    expect(ours.length).toBe(ref.length);
    expect(meanAbsDiff(ours, ref)).toBeLessThan(1.5);
  });

  it("rgbf32-planar is [3, H, W] in [0, 1] and agrees with rgb24", async () => {
    const [rgb] = await decodeAll(video, { output: "rgb24" });
    const [f] = await decodeAll(video, { output: "rgbf32-planar" });
    expect(f!.shape).toEqual([3, 96, 160]);
    expect(f!.data).toBeInstanceOf(Float32Array);
    const data = f!.data as Float32Array;
    expect(Math.min(...data)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...data)).toBeLessThanOrEqual(1);
    // Plane c, pixel (y, x) ↔ rgb24 byte (y * W + x) * 3 + c.
    const interleaved = new Float32Array(data.length);
    for (let c = 0; c < 3; c++) for (let p = 0; p < 160 * 96; p++) interleaved[p * 3 + c] = data[c * 160 * 96 + p]!;
    // 8-bit sources go through the same rgb24 pixels, so only float rounding differs.
    expect(meanAbsDiff(interleaved, rgb!.data, 255)).toBeLessThan(0.01);
  });

  it("resize scales to [h, w] in every output format", async () => {
    const [n] = await decodeAll(video, { resize: [48, 64] });
    expect(n!.shape).toEqual([48, 64]);
    expect(n!.format).toBe("yuv420p");
    expect(n!.data.byteLength).toBe(64 * 48 * 1.5);
    const frames = await decodeAll(video, { output: "rgb24", resize: [48, 64] });
    expect(frames[0]!.shape).toEqual([48, 64, 3]);
    const ref = await ffmpegRgb(video.file, 64, 48);
    expect(meanAbsDiff(frames[0]!.data, ref.subarray(0, 64 * 48 * 3))).toBeLessThan(3);
    const [f] = await decodeAll(video, { output: "rgbf32-planar", resize: [30, 50] });
    expect(f!.shape).toEqual([3, 30, 50]);
    expect(f!.data.length).toBe(3 * 30 * 50);
  });

  it("rejects a bad output or resize before any native call", async () => {
    const t = video.track;
    const base = { codec: t.codec, extradata: t.extradata, width: t.width, height: t.height };
    await expect(createDecoder({ ...base, output: "bgr" as "rgb24" })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
    });
    await expect(createDecoder({ ...base, resize: [0, 10] })).rejects.toThrow(
      "Expected [height, width] with integers in 1..16384 for resize",
    );
  });
});
