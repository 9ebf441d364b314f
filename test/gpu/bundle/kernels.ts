/** The CUDA kernels against their host twins over the CPU decoder's frames (as test/native/gpu-decode.test.ts). */
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";

import {
  convertReference,
  lumaStatsOnDevice,
  lumaStatsReference,
  type DecoderOptions,
  type DeviceFrame,
  type HostDevices,
  type HostFrame,
} from "../../../native/index.js";
import { decodeFrames } from "./decode.js";
import { indexed, type Manifest, type Outcome } from "./shared.js";

const CONVERSIONS: [string, Partial<DecoderOptions>][] = [
  ["rgb24", { output: "rgb24" }],
  ["rgb24 resized to 224x224", { output: "rgb24", resize: [224, 224] }],
  ["rgbf32-planar resized to 96x160", { output: "rgbf32-planar", resize: [96, 160] }],
];

export async function kernelChecks(
  manifest: Manifest,
  bundle: string,
  d: HostDevices,
  gpuSkip: string | null,
): Promise<Outcome[]> {
  if (gpuSkip) return [{ status: "skip", detail: gpuSkip }];
  if (!d.cuda.kernels.compiled)
    return [{ status: "fail", detail: `the addon has no kernels: ${d.cuda.kernels.reason}` }];
  const entry = manifest.videos.find((v) => v.codec === "h264")!;
  const video = await indexed(join(bundle, "videos", entry.file));
  const cpu = (await decodeFrames(video)) as HostFrame[];
  const outcomes: Outcome[] = [];
  for (const [name, extra] of CONVERSIONS) {
    const gpu = (await decodeFrames(video, { device: "cuda:0", ...extra })) as DeviceFrame[];
    let max = 0;
    for (let i = 0; i < gpu.length; i++) {
      const host = await gpu[i]!.toHost();
      const twin = await convertReference(cpu[i]!, {
        output: extra.output as "rgb24",
        ...(extra.resize ? { resize: extra.resize } : {}),
      });
      if (!isDeepStrictEqual(host.shape, twin.shape))
        throw new Error(`${name}: shape ${host.shape.join("x")} but the twin's is ${twin.shape.join("x")}`);
      for (let j = 0; j < twin.data.length; j++) max = Math.max(max, Math.abs(host.data[j]! - twin.data[j]!));
    }
    const limit = extra.output === "rgb24" ? 1 : 1 / 255;
    const same = gpu.length === cpu.length && max <= limit;
    outcomes.push({
      status: same ? "pass" : "fail",
      detail: `ec_convert ${name}: ${gpu.length} frames, largest difference to the host twin ${max} (allowed ${limit})`,
    });
  }
  const gpu = (await decodeFrames(video, { device: "cuda:0" })) as DeviceFrame[];
  const hosts = await Promise.all(gpu.map((f) => f.toHost()));
  const onDevice = await lumaStatsOnDevice(gpu, 5);
  const twin = await lumaStatsReference(
    hosts.map((h) => ({
      data: new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength),
      format: h.format,
      width: h.width,
      height: h.height,
      pitch: h.planes[0]!.rowBytes,
    })),
    5,
  );
  const same = isDeepStrictEqual(onDevice, twin);
  outcomes.push({
    status: same ? "pass" : "fail",
    detail: `ec_luma_stats over ${gpu.length} frames at step 5 ${same ? "equals" : "differs from"} the host twin`,
  });
  return outcomes;
}
