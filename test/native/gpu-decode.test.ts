import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createDecoder, devices, frameMd5, packetsFromTrack, type DeviceFrame } from "../../native/index.js";
import type { MakeVideoOptions } from "../helpers/make-video.js";
import { ffmpegFrameMd5s, indexedVideo } from "./helpers.js";

const d = devices();
const why = d.cuda.nvdec.available ? "" : ` — skipped: ${d.cuda.nvdec.reason ?? "no NVDEC"}`;

describe.skipIf(!d.cuda.nvdec.available)(`NVDEC decode into device memory${why}`, () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "ec-native-gpu-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cases: [string, MakeVideoOptions, string][] = [
    ["h264 with B-frames", { codec: "h264", width: 320, height: 192, frames: 30, bframes: 3 }, "nv12"],
    ["hevc 8-bit", { codec: "hevc", width: 320, height: 192, frames: 24, bframes: 2 }, "nv12"],
    ["hevc 10-bit", { codec: "hevc", width: 320, height: 192, frames: 24, pixFmt: "yuv420p10le", name: "g10.mp4" }, "p010le"],
    ["av1", { codec: "av1", width: 320, height: 192, frames: 24 }, "nv12"],
    ["vp9", { codec: "vp9", width: 320, height: 192, frames: 24 }, "nv12"],
  ];

  it.each(cases)("%s: device frames whose toHost() matches ffmpeg -hwaccel cuda framemd5", async (_name, options, format) => {
    if (!d.cuda.nvdec.codecs.includes(options.codec)) return;
    const v = await indexedVideo(dir, options);
    const t = v.track;
    const decoder = await createDecoder({ codec: t.codec, extradata: t.extradata, width: t.width, height: t.height, device: "cuda:0" });
    const frames = (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as DeviceFrame[];
    expect(frames).toHaveLength(options.frames);
    expect(frames[0]!.kind).toBe("device");
    expect(frames[0]!.format).toBe(format);
    expect(frames[0]!.pointer).toBeGreaterThan(0n);
    expect(frames[0]!.pitch).toBeGreaterThanOrEqual(t.width);
    const hosts = await Promise.all(frames.map((f) => f.toHost()));
    expect(hosts.map(frameMd5)).toEqual(await ffmpegFrameMd5s(v.file, ["-hwaccel", "cuda"]));
    await decoder.close();
  });
});
