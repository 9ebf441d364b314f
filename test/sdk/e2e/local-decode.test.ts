import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ffmpegFrameMd5s as ffmpegMd5s, expectFramesMatch } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open } from "../../../sdk/index.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-decode-"));
  await makeVideo(dir, { codec: "h264", width: 96, height: 64, frames: 40, gop: 10, bframes: 2, name: "b.mp4" });
  await makeVideo(dir, { codec: "hevc", width: 96, height: 64, frames: 30, gop: 10, faststart: true, name: "h.mp4" });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("open() with the native decoder over local files", () => {
  it("delivers frames byte-equal to ffmpeg's decode of the same frame, exact starts with B-frames", async () => {
    const expected = new Map([
      ["b.mp4", await ffmpegMd5s(join(dir, "b.mp4"))],
      ["h.mp4", await ffmpegMd5s(join(dir, "h.mp4"))],
    ]);
    const ds = await open(dir, {
      frames: 3,
      stride: 2,
      align: "exact",
      hop: 7,
      format: "native",
      batch: 2,
      device: "cpu",
      workers: 2,
    });
    let checked = 0;
    for await (const b of ds) {
      checked += expectFramesMatch(b, (key) => expected.get(key)!);
    }
    expect(checked).toBe((6 + 4) * 3);
    expect(ds.stats().device).toBe("cpu");
  });

  it("resizes to [B, T, H, W, 3] rgb24", async () => {
    const ds = await open(dir, { frames: 4, size: [32, 48], batch: 3, device: "cpu", shuffle: false });
    const shapes = [];
    for await (const b of ds) shapes.push(b.frames.shape);
    expect(shapes[0]).toEqual([3, 4, 32, 48, 3]);
    expect(ds.stats().frames).toBe(ds.clipCount * 4);
  });
});
