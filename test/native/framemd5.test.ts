import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createDecoder, frameMd5, packetsFromTrack, type HostFrame } from "../../native/index.js";
import type { MakeVideoOptions } from "../helpers/make-video.js";
import { ffmpegFrameMd5s, indexedVideo } from "./helpers.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-md5-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const cases: [string, MakeVideoOptions, string][] = [
  ["h264 with B-frames", { codec: "h264", width: 176, height: 100, frames: 40, bframes: 3, gop: 12 }, "yuv420p"],
  ["hevc 8-bit with B-frames", { codec: "hevc", width: 160, height: 96, frames: 30, bframes: 2 }, "yuv420p"],
  ["hevc 10-bit", { codec: "hevc", width: 160, height: 96, frames: 24, pixFmt: "yuv420p10le", name: "hevc10.mp4" }, "yuv420p10le"],
  ["av1", { codec: "av1", width: 160, height: 96, frames: 24 }, "yuv420p"],
  ["vp9", { codec: "vp9", width: 160, height: 96, frames: 24 }, "yuv420p"],
  // Odd row lengths (175 bytes in every plane): the packing copy's unaligned head and tail.
  ["h264 4:4:4, odd size", { codec: "h264", width: 175, height: 99, frames: 12, pixFmt: "yuv444p", name: "odd444.mp4" }, "yuv444p"],
];

describe("decode matches ffmpeg's framemd5 frame for frame", () => {
  it.each(cases)("%s", async (_name, options, format) => {
    const v = await indexedVideo(dir, options);
    const t = v.track;
    const decoder = await createDecoder({ codec: t.codec, extradata: t.extradata, width: t.width, height: t.height, threads: 2 });
    const frames = (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as HostFrame[];
    await decoder.close();
    expect(frames.length).toBe(options.frames);
    expect(frames[0]!.format).toBe(format);
    // Presentation order: pts strictly increasing even where decode order differs.
    for (let i = 1; i < frames.length; i++) expect(frames[i]!.pts).toBeGreaterThan(frames[i - 1]!.pts);
    expect(frames.map(frameMd5)).toEqual(await ffmpegFrameMd5s(v.file));
  });

  it("decoding from a mid-stream keyframe gives the same frames as the full decode", async () => {
    const v = await indexedVideo(dir, { codec: "h264", width: 160, height: 96, frames: 36, bframes: 2, gop: 12, name: "mid.mp4" });
    const t = v.track;
    const decoder = await createDecoder({ codec: t.codec, extradata: t.extradata, width: t.width, height: t.height });
    const all = (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as HostFrame[];
    const key = Array.from(t.samples.keyframe).findIndex((k, i) => k === 1 && i > 0);
    expect(key).toBeGreaterThan(0);
    const count = t.samples.size.length - key;
    const start = t.samples.offset[key]!;
    // Only the range from the keyframe on, as a clip fetch gets it.
    const range = v.bytes.slice(start);
    const clip = (await decoder.decode(packetsFromTrack(t, range, start, key, count), { dropBefore: t.samples.pts[key]! })) as HostFrame[];
    const tail = all.filter((f) => f.pts >= t.samples.pts[key]!);
    expect(clip.length).toBe(tail.length);
    expect(clip.map(frameMd5)).toEqual(tail.map(frameMd5));
    expect(clip.map((f) => f.pts)).toEqual(tail.map((f) => f.pts));
  });
});
