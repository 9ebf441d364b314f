import { describe, expect, it } from "vitest";
import { parseCompareArgs, PRESETS } from "../../bench/compare/args.js";
import { bytesPerClipOf, figuresOf, ratiosOf, targetsOf, type RowResult } from "../../bench/compare/figures.js";
import type { Measured } from "../../bench/compare/run-child.js";
import { fileOrder } from "../../bench/compare/rows/peers.js";
import { gameplayArgs } from "../../bench/gameplay-video.js";

function measured(clips: number, seconds: number, cpuSeconds: number, bytes: number): { kind: "ran" } & Measured {
  return {
    kind: "ran",
    report: {
      clips,
      frames: clips * 16,
      seconds,
      firstBatchSeconds: 1,
      stallRatio: 0.5,
      cpuSeconds,
      bytesFetched: bytes,
    },
    peakMemoryBytes: 2 ** 20,
    cpuSeconds,
    wanBytes: undefined,
    wanRequests: undefined,
    remoteCpuSeconds: 0,
    alsoCpuSeconds: undefined,
    alsoMinorFaults: undefined,
  };
}

describe("bench presets", () => {
  it("sets 1080p gameplay videos, both codecs, 224x224 clips and the peer rows", () => {
    const c = parseCompareArgs(["--preset", "gameplay-1080p"]);
    expect(c).toMatchObject({
      preset: "gameplay-1080p",
      width: 1920,
      height: 1080,
      fps: 60,
      gop: 240,
      bitrateMbps: 12,
      codecs: ["h264", "hevc"],
      resize: [224, 224],
    });
    expect(c.rows).toEqual([
      "local",
      "ec_cold",
      "ec_warm",
      "torchcodec_local",
      "torchcodec_local_sequential",
      "torchcodec_remote",
      "spdl",
    ]);
    expect(parseCompareArgs(["--preset", "gameplay-720p"])).toMatchObject({ width: 1280, height: 720, gop: 120 });
  });

  it("lets a flag given with a preset override it, and leaves runs without one as they were", () => {
    const c = parseCompareArgs(["--preset", "gameplay-720p", "--gop", "250", "--codecs", "hevc", "--rows", "local"]);
    expect(c).toMatchObject({ gop: 250, codecs: ["hevc"], rows: ["local"], bitrateMbps: 8 });
    expect(parseCompareArgs([])).toMatchObject({
      preset: undefined,
      width: 640,
      codecs: ["h264"],
      bitrateMbps: undefined,
      resize: undefined,
    });
    // --resize is WxH, ec's size [height, width].
    expect(parseCompareArgs(["--resize", "320x180"]).resize).toEqual([180, 320]);
  });

  it("rejects an unknown preset, codec or resize with what it expected", () => {
    expect(() => parseCompareArgs(["--preset", "gameplay-4k"])).toThrow(
      /Expected --preset among gameplay-720p, gameplay-1080p but received/,
    );
    expect(() => parseCompareArgs(["--codecs", "h264,vp9"])).toThrow(/Expected codecs among h264, hevc/);
    expect(() => parseCompareArgs(["--resize", "224"])).toThrow(/Expected WxH \(e.g. 224x224\) for --resize/);
  });

  it("keeps every preset within the issue's bounds: 60 fps, GOPs of 120–250, 8–15 Mbit/s", () => {
    for (const p of Object.values(PRESETS)) {
      expect(Number(p.fps)).toBe(60);
      expect(Number(p.gop)).toBeGreaterThanOrEqual(120);
      expect(Number(p.gop)).toBeLessThanOrEqual(250);
      expect(Number(p["bitrate-mbps"])).toBeGreaterThanOrEqual(8);
      expect(Number(p["bitrate-mbps"])).toBeLessThanOrEqual(15);
    }
  });

  it("encodes H.264 High with B-frames and HEVC at a fixed GOP and a capped bitrate", () => {
    const v = { width: 1920, height: 1080, fps: 60, gop: 240, seconds: 8, bitrateMbps: 12, faststart: true, seed: 0 };
    const h264 = gameplayArgs({ ...v, codec: "h264" }, "a.mp4").join(" ");
    expect(h264).toContain("-profile:v high -bf 3 -g 240 -keyint_min 240 -sc_threshold 0 -b:v 12000k -maxrate 15000k");
    expect(h264).toContain("-frames:v 480");
    const hevc = gameplayArgs({ ...v, codec: "hevc", faststart: false }, "b.mp4").join(" ");
    expect(hevc).toContain("bframes=3:keyint=240:min-keyint=240:scenecut=0:vbv-maxrate=15000");
    expect(hevc).not.toContain("faststart");
  });
});

describe("bench rows against torchcodec", () => {
  const ref = { clipsPerS: 4, steadyClipsPerS: 4 };
  const row = (label: string, clips: number, cpuS: number, bytes: number): RowResult => ({
    label,
    status: "ran",
    figures: figuresOf(measured(clips, 10, cpuS, bytes), ref),
  });

  it("adds the three torchcodec ratios under their names, with their targets", () => {
    const rows = {
      // 40 clips of 16 frames in 10 s: 4 clips/s, 1 ms of CPU a frame (0.64 CPU-s).
      local: row("local", 40, 0.64, 40_000),
      ec_cold: row("cold", 36, 0.8, 36_000),
      torchcodec_local: row("tc random", 16, 0.9, 16_000),
      torchcodec_local_sequential: row("tc file order", 50, 0.64, 50_000),
      torchcodec_remote: row("tc remote", 12, 0.9, 12 * 6_900),
      spdl: row("spdl", 20, 0.5, 20_000),
    } as const;
    const r = ratiosOf(rows, 1000);
    expect(r.ec_cold_vs_torchcodec_remote).toBe(3); // 0.9 × local over 0.3 × local
    expect(r.ec_local_vs_torchcodec_random).toBe(2.5); // local over 0.4 × local
    // 1 ms a frame against 0.8 ms (0.64 CPU-s over 800 frames).
    expect(r.ec_cpu_per_frame_vs_torchcodec_sequential).toBe(1.25);
    expect(r.ec_local_vs_spdl_random).toBe(2);
    const t = Object.fromEntries(targetsOf(r).map((x) => [x.ratio, x]));
    expect(t.ec_cold_vs_torchcodec_remote).toMatchObject({ min: 2, met: true, margin: 1.5 });
    expect(t.ec_local_vs_torchcodec_random).toMatchObject({ min: 1, met: true });
    expect(t.ec_cpu_per_frame_vs_torchcodec_sequential).toMatchObject({ max: 1.05, met: false, margin: 0.84 });
    expect(bytesPerClipOf(rows)).toEqual({
      local: 1000,
      ec_cold: 1000,
      torchcodec_local: 1000,
      torchcodec_local_sequential: 1000,
      torchcodec_remote: 6900,
      spdl: 1000,
    });
  });

  it("leaves the ratios null when a torchcodec row did not run", () => {
    const r = ratiosOf(
      {
        local: row("local", 40, 0.64, 0),
        torchcodec_remote: { label: "tc remote", status: "skipped", reason: "no environment" },
      },
      undefined,
    );
    expect(r).toMatchObject({
      ec_cold_vs_torchcodec_remote: null,
      ec_local_vs_torchcodec_random: null,
      ec_cpu_per_frame_vs_torchcodec_sequential: null,
    });
  });

  it("reads the file-order row's clips by object, then first frame", () => {
    const clip = (key: string, start: number) => ({ key, start, startSeconds: start / 30, frames: 16, stride: 1 });
    const order = fileOrder([clip("b.mp4", 16), clip("a.mp4", 32), clip("b.mp4", 0), clip("a.mp4", 0)]);
    expect(order.map((c) => `${c.key}@${c.start}`)).toEqual(["a.mp4@0", "a.mp4@32", "b.mp4@0", "b.mp4@16"]);
  });
});
