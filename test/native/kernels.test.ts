/**
 * The CUDA kernels' arithmetic, checked on any machine through their host twins (the same
 * code from native/src/kernels/pixel-math.h, compiled for the CPU): colour conversion and
 * resize against known values and against libswscale's CPU path, and the label statistics
 * against the TypeScript analysis the CPU labelers use. The GPU runs of the same kernels are
 * compared with these twins in gpu-decode.test.ts (on a CUDA host).
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  convertReference,
  devices,
  lumaStatsOnDevice,
  lumaStatsReference,
  type DecoderOptions,
  type DeviceFrame,
  type HostFrame,
} from "../../native/index.js";
import { analysisFromSums, analyzeClip, type VideoFrame } from "../../sdk/labels/index.js";
import { decodeAll, indexedVideo, type IndexedVideo, decoderFor } from "./helpers.js";

let dir: string;
let h264: IndexedVideo;
let hevc10: IndexedVideo;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-kernels-"));
  h264 = await indexedVideo(dir, { codec: "h264", width: 320, height: 192, frames: 6, bframes: 2 });
  hevc10 = await indexedVideo(dir, {
    codec: "hevc",
    width: 320,
    height: 192,
    frames: 4,
    pixFmt: "yuv420p10le",
    name: "h10.mp4",
  });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A packed yuv420p host frame filled by `y(x, y)` with constant chroma. */
function yuvFrame(
  width: number,
  height: number,
  y: (x: number, row: number) => number,
  u: number,
  v: number,
): HostFrame {
  const cw = width / 2;
  const ch = height / 2;
  const data = new Uint8Array(width * height + 2 * cw * ch);
  for (let r = 0; r < height; r++) for (let x = 0; x < width; x++) data[r * width + x] = y(x, r);
  data.fill(u, width * height, width * height + cw * ch);
  data.fill(v, width * height + cw * ch);
  const planes = [
    { offset: 0, rowBytes: width, rows: height },
    { offset: width * height, rowBytes: cw, rows: ch },
    { offset: width * height + cw * ch, rowBytes: cw, rows: ch },
  ];
  return {
    kind: "host",
    pts: 0,
    width,
    height,
    format: "yuv420p",
    shape: [height, width],
    dtype: "uint8",
    data,
    planes,
    device: "cpu",
  };
}

function stats(a: ArrayLike<number>, b: ArrayLike<number>, scale = 1) {
  let sum = 0;
  let within3 = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) * scale;
    sum += d;
    if (d <= 3) within3++;
  }
  return { mean: sum / a.length, within3: within3 / a.length };
}

describe("GPU colour conversion (host twin of ec_convert)", () => {
  it("maps reference colours exactly: limited-range black, white, BT.601 and BT.709 red, full-range gray", async () => {
    const px = async (
      y: number,
      u: number,
      v: number,
      o: { colorspace?: "bt601" | "bt709"; fullRange?: boolean } = {},
    ) => {
      const out = await convertReference(
        yuvFrame(16, 8, () => y, u, v),
        { output: "rgb24", ...o },
      );
      const d = out.data as Uint8Array;
      // Uniform input, uniform output: every pixel the same.
      for (let i = 3; i < d.length; i += 3) expect([d[i], d[i + 1], d[i + 2]]).toEqual([d[0], d[1], d[2]]);
      return [d[0]!, d[1]!, d[2]!];
    };
    expect(await px(16, 128, 128)).toEqual([0, 0, 0]);
    expect(await px(235, 128, 128)).toEqual([255, 255, 255]);
    expect(await px(126, 128, 128)).toEqual([128, 128, 128]); // (126 - 16) * 255 / 219 = 128.08
    // BT.601 red is Y 81, Cb 90, Cr 240; BT.709 red is Y 63, Cb 102, Cr 240.
    const red601 = await px(81, 90, 240);
    const red709 = await px(63, 102, 240, { colorspace: "bt709" });
    for (const red of [red601, red709]) {
      expect(red[0]).toBeGreaterThanOrEqual(253);
      expect(red[1]).toBeLessThanOrEqual(2);
      expect(red[2]).toBeLessThanOrEqual(2);
    }
    expect(await px(200, 128, 128, { fullRange: true })).toEqual([200, 200, 200]);
  });

  it("resizes with a tent as wide as the downscale: a ramp halves to the averages of its pixel pairs", async () => {
    const ramp = yuvFrame(256, 4, (x) => x, 128, 128);
    const out = await convertReference(ramp, { output: "rgb24", resize: [2, 128], fullRange: true });
    const d = out.data as Uint8Array;
    expect(out.shape).toEqual([2, 128, 3]);
    // Output pixel ox covers source pixels 2ox and 2ox+1: weights 1/8, 3/8, 3/8, 1/8 over 2ox-1..2ox+2 → 2ox + 0.5.
    for (let ox = 0; ox < 127; ox++) expect(d[3 * ox]).toBe(2 * ox + 1);
    expect(d[3 * 127]).toBe(254); // the right edge repeats the last pixel: (253 + 3·254 + 3·255 + 255) / 8
    const up = await convertReference(ramp, { output: "rgbf32-planar", resize: [4, 512], fullRange: true });
    const f = up.data as Float32Array;
    // Upscaling is bilinear between pixel centres: output 2k+1 sits a quarter past source k.
    expect(f[2 * 10 + 1]! * 255).toBeCloseTo(10.25, 4);
    expect(f[0]).toBe(0);
  });

  // The kernel interpolates chroma (H.264's default siting: co-sited with even luma columns);
  // libswscale's fast path repeats it. On testsrc2's sharp saturated edges that moves the two
  // pixels beside each colour edge; everywhere else they agree. Tolerance, stated: mean
  // absolute difference ≤ 3.5 of 255 and ≥ 88 % of samples within ±3 at the decoded size, mean
  // ≤ 6.5 and ≥ 75 % within ±3 when shrinking (libswscale shrinks chroma its own way); luma is exact
  // at the decoded size and within ±3 of libswscale's bilinear when shrinking. Gross errors —
  // a swapped channel, a wrong matrix or range, a shifted row — cost tens of levels.
  it("agrees with libswscale's CPU conversion on decoded video, within the stated tolerance", async () => {
    const native = await decodeAll(h264);
    const cpuRgb = await decodeAll(h264, { output: "rgb24" });
    const cpuSmall = await decodeAll(h264, { output: "rgb24", resize: [96, 112] });
    const cpuFloat = await decodeAll(h264, { output: "rgbf32-planar" });
    for (let i = 0; i < native.length; i++) {
      const rgb = await convertReference(native[i]!, { output: "rgb24" });
      expect(rgb.shape).toEqual([192, 320, 3]);
      const full = stats(rgb.data, cpuRgb[i]!.data);
      expect(full.mean).toBeLessThanOrEqual(3.5);
      expect(full.within3).toBeGreaterThanOrEqual(0.88);
      const small = await convertReference(native[i]!, { output: "rgb24", resize: [96, 112] });
      const s = stats(small.data, cpuSmall[i]!.data);
      expect(s.mean).toBeLessThanOrEqual(6.5);
      expect(s.within3).toBeGreaterThanOrEqual(0.75);
      const float = await convertReference(native[i]!, { output: "rgbf32-planar" });
      expect(float.shape).toEqual([3, 192, 320]);
      expect(stats(float.data, cpuFloat[i]!.data, 255).mean).toBeLessThanOrEqual(3.5);
    }
  });

  it("reads luma exactly: neutral chroma gives (Y − 16) · 255 / 219 in every channel", async () => {
    const [yuv] = await decodeAll(h264);
    const data = new Uint8Array(yuv!.data as Uint8Array);
    data.fill(128, 320 * 192);
    const rgb = (await convertReference({ ...yuv!, data }, { output: "rgb24" })).data as Uint8Array;
    for (let i = 0; i < 320 * 192; i++) {
      const expected = Math.min(255, Math.max(0, Math.round(((data[i]! - 16) * 255) / 219)));
      if (rgb[3 * i] !== expected || rgb[3 * i + 1] !== expected || rgb[3 * i + 2] !== expected) {
        expect([i, rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]]).toEqual([i, expected, expected, expected]);
      }
    }
  });

  it("reads 10-bit frames (yuv420p10le) in their full precision", async () => {
    const native = await decodeAll(hevc10);
    const cpuRgb = await decodeAll(hevc10, { output: "rgb24" });
    expect(native[0]!.format).toBe("yuv420p10le");
    const rgb = await convertReference(native[0]!, { output: "rgb24" });
    const s = stats(rgb.data, cpuRgb[0]!.data);
    expect(s.mean).toBeLessThanOrEqual(3.5);
    expect(s.within3).toBeGreaterThanOrEqual(0.88);
  });

  it("rejects what it cannot convert with typed errors", async () => {
    const [rgb] = await decodeAll(h264, { output: "rgb24" });
    await expect(convertReference(rgb!, { output: "rgb24" })).rejects.toMatchObject({ code: "ERR_UNSUPPORTED_FORMAT" });
    const [yuv] = await decodeAll(h264);
    await expect(convertReference(yuv!, { output: "native" as "rgb24" })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
    });
  });
});

/** The labelers' view of a decoded host frame. */
function videoFrame(f: HostFrame): VideoFrame {
  const bytes = new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
  if (f.format === "rgbf32-planar")
    return { format: "rgbf32p", width: f.width, height: f.height, data: f.data as Float32Array };
  return {
    format: f.format as VideoFrame["format"],
    width: f.width,
    height: f.height,
    data: bytes,
    stride: f.planes[0]!.rowBytes,
  };
}

describe("GPU label statistics (host twin of ec_luma_stats)", () => {
  const cases: [string, () => IndexedVideo, Partial<DecoderOptions>][] = [
    ["yuv420p", () => h264, {}],
    ["yuv420p10le", () => hevc10, {}],
    ["rgb24", () => h264, { output: "rgb24" }],
    ["rgbf32-planar", () => h264, { output: "rgbf32-planar", resize: [100, 150] }],
  ];
  it.each(cases)(
    "%s: the same FrameStats as the CPU analysis, exactly, at steps 1, 3 and 7",
    async (_name, video, extra) => {
      const frames = await decodeAll(video(), extra);
      const views = frames.map(videoFrame);
      for (const step of [1, 3, 7]) {
        const sums = await lumaStatsReference(
          frames.map((f) => ({
            data: new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength),
            format: f.format,
            width: f.width,
            height: f.height,
            pitch: f.planes[0]!.rowBytes,
          })),
          step,
        );
        const gridSamples = step === 1 ? 0 : Math.round((frames[0]!.width * frames[0]!.height) / (step * step));
        const cpu = analyzeClip(views, { gridSamples });
        expect(cpu.step).toBe(step);
        expect(sums[0]!.absDiff).toBeUndefined();
        expect(sums[1]!.absDiff).toBeGreaterThan(0);
        expect(analysisFromSums(views, step, sums)).toEqual(cpu);
      }
    },
  );

  it("starts a new comparison when the frame size changes, as the CPU analysis does", async () => {
    const a = yuvFrame(64, 32, (x) => x, 128, 128);
    const b = yuvFrame(32, 16, (x) => 2 * x, 128, 128);
    const frames = [a, b, b];
    const sums = await lumaStatsReference(
      frames.map((f) => ({
        data: f.data as Uint8Array,
        format: "yuv420p",
        width: f.width,
        height: f.height,
        pitch: f.width,
      })),
      2,
    );
    expect(sums.map((s) => s.absDiff)).toEqual([undefined, undefined, 0]);
    const views = frames.map(videoFrame);
    expect(analysisFromSums(views, 2, sums)).toEqual(analyzeClip(views, { gridSamples: (64 * 32) / 4 }));
  });

  it("rejects unknown formats and host frames given as device frames", async () => {
    await expect(
      lumaStatsReference([{ data: new Uint8Array(16), format: "bgr0", width: 2, height: 2, pitch: 8 }], 1),
    ).rejects.toMatchObject({
      code: "ERR_UNSUPPORTED_FORMAT",
    });
    await expect(lumaStatsReference([], 0)).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    const [host] = await decodeAll(h264);
    await expect(lumaStatsOnDevice([host as unknown as DeviceFrame], 4)).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
    });
  });
});

describe("build", () => {
  it("embeds the kernels exactly when nvcc and the CUDA headers were there at build time", () => {
    const root = join(import.meta.dirname, "../../native");
    const headers = execFileSync("node", ["find-cuda.cjs"], { cwd: root, encoding: "utf8" });
    const nvcc = execFileSync("node", ["find-cuda.cjs", "--nvcc"], { cwd: root, encoding: "utf8" });
    const d = devices();
    expect(d.cuda.kernels.compiled).toBe(headers !== "" && nvcc !== "");
    if (!d.cuda.kernels.compiled) expect(d.cuda.kernels.reason).toMatch(/nvcc|toolkit/);
  });

  it("asks for rgb24 / rgbf32-planar when a cuda decoder should resize, before touching the GPU", async () => {
    const open = decoderFor(h264, { device: "cuda:0", resize: [64, 64] });
    await expect(open).rejects.toMatchObject({
      code: devices().cuda.compiled ? "ERR_UNSUPPORTED_OUTPUT" : "ERR_DEVICE_UNAVAILABLE",
    });
  });
});
