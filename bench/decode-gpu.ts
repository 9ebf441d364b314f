/**
 * NVDEC decode benchmark: ec on "cuda:N" (frames stay in device memory) against
 * `ffmpeg -hwaccel cuda -hwaccel_output_format cuda -i FILE -f null -` on the same GPU, and
 * what the GPU kernels add per frame: rgb24 / rgbf32-planar at 224x224, label statistics.
 * Exits 0 with a skip line where no NVDEC is available. Run by test/gpu/check.sh:
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/decode-gpu.js [--device cuda:0] [--codec h264] [--size 1920x1080] [--frames 600]
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import {
  createDecoder,
  devices,
  lumaStatsOnDevice,
  type DecoderOptions,
  type DeviceFrame,
  type DeviceName,
} from "../native/index.js";
import { gopCalls, indexedFile, makeBenchVideo } from "./decode-fixtures.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    device: { type: "string", default: "cuda:0" },
    codec: { type: "string", default: "h264" },
    size: { type: "string", default: "1920x1080" },
    frames: { type: "string", default: "600" },
    rounds: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  },
});
const d = devices();
if (!d.cuda.nvdec.codecs.includes(values.codec)) {
  console.log(
    `SKIP decode-gpu: NVDEC cannot decode ${values.codec} here: ${d.cuda.nvdec.reason ?? d.cuda.reason ?? "codec not offered"}`,
  );
  process.exit(0);
}
const [width, height] = values.size.split("x").map(Number) as [number, number];
const frames = Number(values.frames);
const gpuIndex = values.device.split(":")[1] ?? "0";

const dir = await mkdtemp(join(tmpdir(), "ec-bench-gpu-"));
try {
  const file = await makeBenchVideo(dir, values.codec, width, height, frames);
  const { track, bytes } = await indexedFile(file);
  const calls = gopCalls(track, bytes);
  // extra: GPU conversion options; label: also run the labelers' statistics kernel on every call's frames.
  const ours = async (extra: Partial<DecoderOptions> = {}, label = false) => {
    const decoder = await createDecoder({
      codec: track.codec,
      extradata: track.extradata,
      width,
      height,
      device: values.device as DeviceName,
      ...extra,
    });
    const t0 = performance.now();
    let n = 0;
    for (const packets of calls) {
      const out = (await decoder.decode(packets)) as DeviceFrame[];
      if (label) await lumaStatsOnDevice(out, 9);
      n += out.length;
    }
    const s = (performance.now() - t0) / 1000;
    await decoder.close();
    if (n !== frames) throw new Error(`decoded ${n} of ${frames} frames`);
    return s;
  };
  const ffmpeg = (limit: string[] = []) => {
    const t0 = performance.now();
    const r = spawnSync("ffmpeg", [
      "-v",
      "error",
      "-hwaccel",
      "cuda",
      "-hwaccel_device",
      gpuIndex,
      "-hwaccel_output_format",
      "cuda",
      "-i",
      file,
      ...limit,
      "-f",
      "null",
      "-",
    ]);
    if (r.status !== 0) throw new Error(`ffmpeg -hwaccel cuda failed: ${r.stderr}`);
    return (performance.now() - t0) / 1000;
  };
  await ours();
  const t = {
    ours: [] as number[],
    ffmpeg: [] as number[],
    startup: [] as number[],
    rgb: [] as number[],
    float: [] as number[],
    labels: [] as number[],
  };
  for (let r = 0; r < Number(values.rounds); r++) {
    t.ffmpeg.push(ffmpeg());
    t.startup.push(ffmpeg(["-frames:v", "1"]));
    t.ours.push(await ours());
    t.rgb.push(await ours({ output: "rgb24", resize: [224, 224] }));
    t.float.push(await ours({ output: "rgbf32-planar", resize: [224, 224] }));
    t.labels.push(await ours({}, true));
  }
  const extraMs = (times: number[]) => (1000 * (median(times) - median(t.ours))) / frames;
  const result = {
    file: `${values.codec} ${width}x${height}, ${frames} frames`,
    device: values.device,
    ecFps: frames / median(t.ours),
    ffmpegFps: frames / median(t.ffmpeg),
    ffmpegDecodeOnlyFps: frames / (median(t.ffmpeg) - median(t.startup)),
    ratio: median(t.ffmpeg) / median(t.ours),
    ratioDecodeOnly: (median(t.ffmpeg) - median(t.startup)) / median(t.ours),
    rgb24Resize224ExtraMsPerFrame: extraMs(t.rgb),
    rgbf32Resize224ExtraMsPerFrame: extraMs(t.float),
    labelStatsExtraMsPerFrame: extraMs(t.labels),
    labelStatsOverDecode: (median(t.labels) - median(t.ours)) / median(t.ours),
  };
  if (values.json) console.log(JSON.stringify(result));
  else {
    console.log(`NVDEC decode — ${result.file} on ${result.device} (${d.cuda.devices[Number(gpuIndex)]?.name ?? "?"})`);
    console.log(
      `  ffmpeg -hwaccel cuda        ${result.ffmpegFps.toFixed(1)} fps (minus start-up: ${result.ffmpegDecodeOnlyFps.toFixed(1)})`,
    );
    console.log(
      `  ec decode on ${values.device}        ${result.ecFps.toFixed(1)} fps   ratio ${result.ratio.toFixed(3)} (vs start-up-corrected: ${result.ratioDecodeOnly.toFixed(3)})`,
    );
    console.log(`  + rgb24 224x224 on the GPU   +${result.rgb24Resize224ExtraMsPerFrame.toFixed(3)} ms/frame`);
    console.log(`  + rgbf32-planar 224x224      +${result.rgbf32Resize224ExtraMsPerFrame.toFixed(3)} ms/frame`);
    console.log(
      `  + label statistics (GPU)     +${result.labelStatsExtraMsPerFrame.toFixed(3)} ms/frame = ${result.labelStatsOverDecode.toFixed(3)} of decode (target ≤ 0.10)`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
