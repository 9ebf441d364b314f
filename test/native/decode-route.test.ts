import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecodeRouter, devices, type DeviceTable } from "../../native/index.js";
import { open } from "../../sdk/index.js";
import { nativeDecoders } from "../../sdk/pipeline/native-decode.js";
import { summaryLine } from "../../sdk/cli/stream.js";
import { makeVideo } from "../helpers/make-video.js";

/** An H200 as devices() reports it: NVDEC for H.264, HEVC and VP9, none for AV1. */
const h200: DeviceTable = {
  cuda: {
    available: true,
    nvdec: { available: true },
    devices: [0, 1].map((index) => ({
      index,
      name: "NVIDIA H200",
      memoryBytes: 150e9,
      nvdec: {
        h264: { supported: true, probed: true },
        hevc: { supported: true, probed: true },
        vp9: { supported: true, probed: true },
        av1: { supported: false, probed: true, reason: `the NVDEC of cuda:${index} does not decode av1` },
      },
    })),
  },
};
const noGpu: DeviceTable = { cuda: { available: false, nvdec: { available: false }, devices: [] } };

describe("decode routing by each device's NVDEC capabilities", () => {
  it('"auto" sends a codec the NVDEC decodes to the GPU and AV1 to the CPU, as a fallback that says why', () => {
    const r = new DecodeRouter(() => h200);
    expect(r.route("auto", "h264")).toEqual({ device: "cuda:0" });
    expect(r.route("auto", "vp9")).toEqual({ device: "cuda:0" });
    expect(r.route("auto", "av1")).toEqual({
      device: "cpu",
      fallback: {
        codec: "av1",
        reason: "cuda:0 cannot decode av1 (the NVDEC of cuda:0 does not decode av1); decoded on the CPU",
      },
    });
  });

  it("an explicit cuda device falls back the same way; the CPU stays the CPU; a device not there is left to the decoder", () => {
    const r = new DecodeRouter(() => h200);
    expect(r.route("cuda:1", "hevc")).toEqual({ device: "cuda:1" });
    expect(r.route("cuda", "av1")).toMatchObject({ device: "cpu", fallback: { codec: "av1" } });
    expect(r.route("cuda:1", "av1")).toMatchObject({
      device: "cpu",
      fallback: { reason: expect.stringContaining("cuda:1 does not decode av1") },
    });
    expect(r.route("cpu", "h264")).toEqual({ device: "cpu" });
    expect(r.route("cuda:7", "h264")).toEqual({ device: "cuda:7" });
  });

  it("a codec this FFmpeg has no NVDEC hwaccel for falls back too", () => {
    const r = new DecodeRouter(() => ({ cuda: { ...h200.cuda, devices: [{ ...h200.cuda.devices[0]!, nvdec: {} }] } }));
    expect(r.route("auto", "vp9")).toMatchObject({
      device: "cpu",
      fallback: { reason: expect.stringContaining("no NVDEC hwaccel for vp9") },
    });
  });

  it("without a GPU, auto is the CPU and no fallback; the capability table is read once", () => {
    let reads = 0;
    const r = new DecodeRouter(() => (reads++, noGpu));
    for (const codec of ["h264", "av1", "hevc"]) expect(r.route("auto", codec)).toEqual({ device: "cpu" });
    expect(reads).toBe(1);
    expect(
      new DecodeRouter(() => {
        throw new Error("no addon");
      }).route("auto", "h264"),
    ).toEqual({ device: "cpu" });
  });

  it("this host's devices() reports per-device, per-codec NVDEC support (none here without a GPU)", () => {
    const d = devices();
    for (const device of d.cuda.devices) {
      for (const [codec, s] of Object.entries(device.nvdec)) {
        expect(d.cuda.nvdec.codecs).toContain(codec);
        expect(typeof s.supported).toBe("boolean");
        if (!s.supported) expect(s.reason).toBeTruthy();
      }
    }
    if (!d.cuda.available) expect(new DecodeRouter().route("auto", "av1")).toEqual({ device: "cpu" });
  });
});

describe("fallbacks reach stats() and the ec stream summary", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "ec-decode-route-"));
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 8, name: "a.mp4" });
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("clips whose codec the device's NVDEC lacks decode on the CPU and are counted, with their codecs", async () => {
    // This host's CPU stands in for the GPU's: the table says cuda:0 has no H.264 NVDEC.
    const table: DeviceTable = {
      cuda: {
        ...h200.cuda,
        devices: [
          { ...h200.cuda.devices[0]!, nvdec: { h264: { supported: false, probed: true, reason: "no H.264 NVDEC" } } },
        ],
      },
    };
    for (const gops of [true, false]) {
      const natives = nativeDecoders({ router: new DecodeRouter(() => table) });
      const { decode, openRun } = natives;
      const ds = await open(
        dir,
        { device: "auto", frames: 4, align: "exact", hop: 4 },
        { decode, ...(gops ? { openRun } : { openRun: false }) },
      );
      let clips = 0;
      for await (const b of ds) {
        clips += b.clips.length;
        expect(b.decoded.every((d) => d.device === "cpu")).toBe(true);
      }
      await ds.close();
      await natives.close();
      expect(ds.stats()).toMatchObject({ clips: 6, device: "cpu", decode_fallbacks: { count: 6, codecs: ["h264"] } });
      expect(clips).toBe(6);
      expect(summaryLine({ stats: ds.stats(), idleAfterFirst: 0 } as Parameters<typeof summaryLine>[0])).toContain(
        "on cpu (6 clips on the CPU: no NVDEC for h264)",
      );
    }
  });

  it("none without a fallback", async () => {
    const ds = await open(dir, { device: "cpu", frames: 4, align: "exact", hop: 4 });
    for await (const _ of ds);
    await ds.close();
    expect(ds.stats().decode_fallbacks).toEqual({ count: 0, codecs: [] });
  });
});
