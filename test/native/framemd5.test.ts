import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { frameMd5, packetsFromTrack, type HostFrame } from "../../native/index.js";
import type { MakeVideoOptions } from "../helpers/make-video.js";
import { ffmpegFrameMd5s, indexedVideo, decoderFor } from "./helpers.js";

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
  [
    "hevc 10-bit",
    { codec: "hevc", width: 160, height: 96, frames: 24, pixFmt: "yuv420p10le", name: "hevc10.mp4" },
    "yuv420p10le",
  ],
  ["av1", { codec: "av1", width: 160, height: 96, frames: 24 }, "yuv420p"],
  ["vp9", { codec: "vp9", width: 160, height: 96, frames: 24 }, "yuv420p"],
  ["vp8 in WebM", { codec: "vp8", width: 160, height: 96, frames: 24, name: "vp8.webm" }, "yuv420p"],
  // Odd row lengths (175 bytes in every plane): the packing copy's unaligned head and tail.
  [
    "h264 4:4:4, odd size",
    { codec: "h264", width: 175, height: 99, frames: 12, pixFmt: "yuv444p", name: "odd444.mp4" },
    "yuv444p",
  ],
];

describe("decode matches ffmpeg's framemd5 frame for frame", () => {
  it.each(cases)("%s", async (_name, options, format) => {
    const v = await indexedVideo(dir, options);
    const t = v.track;
    const decoder = await decoderFor(v, { threads: 2 });
    const frames = (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as HostFrame[];
    await decoder.close();
    expect(frames.length).toBe(options.frames);
    expect(frames[0]!.format).toBe(format);
    // Presentation order: pts strictly increasing even where decode order differs.
    for (let i = 1; i < frames.length; i++) expect(frames[i]!.pts).toBeGreaterThan(frames[i - 1]!.pts);
    expect(frames.map(frameMd5)).toEqual(await ffmpegFrameMd5s(v.file));
  });

  // 256x144 h264/hevc: no cropping and 64-byte rows, so the decoder writes straight into each
  // frame's own packed buffer (the sizes above are copied; 1920x1080, coded as 1088 rows, see
  // coded-height.test.ts).
  it.each([
    ["h264", { codec: "h264", width: 256, height: 144, frames: 36, bframes: 3, gop: 12, name: "inplace264.mp4" }],
    [
      "hevc 10-bit",
      { codec: "hevc", width: 256, height: 144, frames: 24, bframes: 2, pixFmt: "yuv420p10le", name: "inplace265.mp4" },
    ],
  ] as [string, MakeVideoOptions][])(
    "%s decoded in place: ffmpeg's frames, each its own buffer, untouched by later calls",
    async (_name, options) => {
      const v = await indexedVideo(dir, options);
      const t = v.track;
      const decoder = await decoderFor(v, { threads: 2 });
      const whole = () => packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length);
      const first = (await decoder.decode(whole())) as HostFrame[];
      expect(new Set(first.map((f) => f.data.buffer)).size).toBe(options.frames);
      expect(first.every((f) => f.data.byteOffset === 0 && f.data.buffer.byteLength === f.data.byteLength)).toBe(true);
      const expected = await ffmpegFrameMd5s(v.file);
      expect(first.map(frameMd5)).toEqual(expected);
      // Consumers write into frames in place: a later call neither reuses nor reads them.
      for (const f of first) new Uint8Array(f.data.buffer).fill(7);
      const second = (await decoder.decode(whole())) as HostFrame[];
      // Frames decoded only as references (before dropBefore) are released, the rest kept.
      const from = second[10]!.pts;
      const kept = (await decoder.decode(whole(), { dropBefore: from })) as HostFrame[];
      await decoder.close();
      expect(second.map(frameMd5)).toEqual(expected);
      expect(kept.map(frameMd5)).toEqual(expected.slice(10));
      expect(first.every((f) => new Uint8Array(f.data.buffer).every((b) => b === 7))).toBe(true);
    },
  );

  it("decoding from a mid-stream keyframe gives the same frames as the full decode", async () => {
    const v = await indexedVideo(dir, {
      codec: "h264",
      width: 160,
      height: 96,
      frames: 36,
      bframes: 2,
      gop: 12,
      name: "mid.mp4",
    });
    const t = v.track;
    const decoder = await decoderFor(v);
    const all = (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as HostFrame[];
    const key = Array.from(t.samples.keyframe).findIndex((k, i) => k === 1 && i > 0);
    expect(key).toBeGreaterThan(0);
    const count = t.samples.size.length - key;
    const start = t.samples.offset[key]!;
    // Only the range from the keyframe on, as a clip fetch gets it.
    const range = v.bytes.slice(start);
    const clip = (await decoder.decode(packetsFromTrack(t, range, start, key, count), {
      dropBefore: t.samples.pts[key]!,
    })) as HostFrame[];
    const tail = all.filter((f) => f.pts >= t.samples.pts[key]!);
    expect(clip.length).toBe(tail.length);
    expect(clip.map(frameMd5)).toEqual(tail.map(frameMd5));
    expect(clip.map((f) => f.pts)).toEqual(tail.map((f) => f.pts));
  });
});
