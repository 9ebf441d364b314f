import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  convertReference,
  devices,
  frameMd5,
  lumaStatsOnDevice,
  lumaStatsReference,
  packetsFromTrack,
  type DecoderOptions,
  type DeviceFrame,
} from "../../native/index.js";
import { analyzeClip, analyzeDeviceClip, labelClip, resolveLabelers, type VideoFrame } from "../../sdk/labels/index.js";
import type { MakeVideoOptions } from "../helpers/make-video.js";
import { decodeAll, ffmpegFrameMd5s, indexedVideo, decoderFor } from "./helpers.js";

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
    [
      "hevc 10-bit",
      { codec: "hevc", width: 320, height: 192, frames: 24, pixFmt: "yuv420p10le", name: "g10.mp4" },
      "p010le",
    ],
    ["av1", { codec: "av1", width: 320, height: 192, frames: 24 }, "nv12"],
    ["vp9", { codec: "vp9", width: 320, height: 192, frames: 24 }, "nv12"],
  ];

  it.each(cases)(
    "%s: device frames whose toHost() matches ffmpeg -hwaccel cuda framemd5",
    async (_name, options, format) => {
      if (!d.cuda.nvdec.codecs.includes(options.codec)) return;
      const v = await indexedVideo(dir, options);
      const t = v.track;
      const decoder = await decoderFor(v, { device: "cuda:0" });
      const frames = (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as DeviceFrame[];
      expect(frames).toHaveLength(options.frames);
      expect(frames[0]!.kind).toBe("device");
      expect(frames[0]!.format).toBe(format);
      expect(frames[0]!.pointer).toBeGreaterThan(0n);
      expect(frames[0]!.pitch).toBeGreaterThanOrEqual(t.width);
      const hosts = await Promise.all(frames.map((f) => f.toHost()));
      expect(hosts.map(frameMd5)).toEqual(await ffmpegFrameMd5s(v.file, ["-hwaccel", "cuda"]));
      await decoder.close();
    },
  );

  // NVDEC's frames equal the CPU decoder's (framemd5 above), so the GPU conversion must equal its
  // host twin over the CPU frames: stated tolerance 1 level of 255 (expected: identical; no FMA).
  const conversions: [string, Partial<DecoderOptions>][] = [
    ["rgb24", { output: "rgb24" }],
    ["rgb24 resized to 224x224", { output: "rgb24", resize: [224, 224] }],
    ["rgbf32-planar resized to 96x160", { output: "rgbf32-planar", resize: [96, 160] }],
  ];
  it.each(conversions)("converts on the GPU (%s) exactly as the host twin does", async (_name, extra) => {
    const v = await indexedVideo(dir, {
      codec: "h264",
      width: 320,
      height: 192,
      frames: 12,
      bframes: 2,
      name: "conv.mp4",
    });
    const gpu = await decodeAll<DeviceFrame>(v, { device: "cuda:0", ...extra });
    const cpu = await decodeAll(v);
    expect(gpu).toHaveLength(cpu.length);
    for (let i = 0; i < gpu.length; i++) {
      expect(gpu[i]!.kind).toBe("device");
      expect(gpu[i]!.format).toBe(extra.output);
      const host = await gpu[i]!.toHost();
      const twin = await convertReference(cpu[i]!, {
        output: extra.output as "rgb24",
        ...(extra.resize ? { resize: extra.resize } : {}),
      });
      expect(host.shape).toEqual(twin.shape);
      let max = 0;
      for (let j = 0; j < twin.data.length; j++) max = Math.max(max, Math.abs(host.data[j]! - twin.data[j]!));
      expect(max).toBeLessThanOrEqual(extra.output === "rgb24" ? 1 : 1 / 255);
    }
  });

  it("computes label statistics on the GPU equal to the CPU analysis, and the same labels", async () => {
    const v = await indexedVideo(dir, {
      codec: "h264",
      width: 320,
      height: 192,
      frames: 16,
      bframes: 2,
      name: "labels.mp4",
    });
    for (const extra of [{}, { output: "rgb24", resize: [112, 112] }] as Partial<DecoderOptions>[]) {
      const gpu = await decodeAll<DeviceFrame>(v, { device: "cuda:0", ...extra });
      const hosts = await Promise.all(gpu.map((f) => f.toHost()));
      const views: VideoFrame[] = hosts.map((h) => ({
        format: h.format as VideoFrame["format"],
        width: h.width,
        height: h.height,
        data: new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength),
        stride: h.planes[0]!.rowBytes,
      }));
      const onDevice = await lumaStatsOnDevice(gpu, 5);
      const twin = await lumaStatsReference(
        hosts.map((h, i) => ({
          data: views[i]!.data as Uint8Array,
          format: h.format,
          width: h.width,
          height: h.height,
          pitch: h.planes[0]!.rowBytes,
        })),
        5,
      );
      expect(onDevice).toEqual(twin);
      expect(await analyzeDeviceClip(gpu)).toEqual(analyzeClip(views));
      const info = { key: "labels.mp4", start: 0, frames: gpu.length, stride: 1 };
      expect(await labelClip(gpu, info, resolveLabelers(true))).toEqual(
        await labelClip(views, info, resolveLabelers(true)),
      );
    }
  });
});
