import { describe, expect, it } from "vitest";

import { createDecoder, devices } from "../../native/index.js";

describe("devices()", () => {
  const d = devices();

  it("lists a CPU decoder for every codec", () => {
    for (const codec of ["h264", "hevc", "av1", "vp9"]) expect(d.cpu.decoders[codec]).toBeTypeOf("string");
    expect(d.readMode.host).toBe("host");
  });

  it.skipIf(d.cuda.available)("on a host without a GPU: says why, and the CUDA paths are off", () => {
    expect(d.cuda.devices).toEqual([]);
    expect(d.cuda.reason).toMatch(/libcuda|driver|no CUDA|CUDA support/);
    expect(d.cuda.nvdec.available).toBe(false);
    expect(d.cuda.nvdec.reason).toBeTypeOf("string");
    expect(d.cufile.available).toBe(false);
    expect(d.readMode.device).toBe("none");
  });

  it.skipIf(d.cuda.available)("on a host without a GPU: a cuda decoder is a typed error, not a crash", async () => {
    await expect(
      createDecoder({ codec: "h264", extradata: new Uint8Array(), width: 64, height: 64, device: "cuda:0" }),
    ).rejects.toMatchObject({ code: "ERR_DEVICE_UNAVAILABLE" });
  });

  it.skipIf(!d.cuda.available)("on a GPU host: devices, NVDEC codecs and a read mode", () => {
    expect(d.cuda.devices.length).toBeGreaterThan(0);
    expect(d.cuda.devices[0]!.memoryBytes).toBeGreaterThan(0);
    expect(d.cuda.nvdec.codecs).toContain("h264");
    expect(["cufile", "compat"]).toContain(d.readMode.device);
  });

  it("rejects a malformed device name", async () => {
    await expect(
      createDecoder({ codec: "h264", extradata: new Uint8Array(), width: 64, height: 64, device: "gpu" as "cpu" }),
    ).rejects.toThrow('Expected "cpu" or "cuda:N" for device but received "gpu"');
  });
});
