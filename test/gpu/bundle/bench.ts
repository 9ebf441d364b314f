/**
 * The decode benchmark of the bundle: NVDEC (frames left in device memory) against the CPU
 * decoder (every core) on the same file in GOP-sized calls: frames/s, and CPU seconds per
 * frame of this process (decoder threads included) for each.
 */
import { availableParallelism } from "node:os";
import { join } from "node:path";

import { gopCalls } from "../../../bench/decode-fixtures.js";
import { createDecoder, type DecoderOptions, type HostDevices, type Packets } from "../../../native/index.js";
import type { Video } from "./decode.js";
import { indexed, type Manifest, type Outcome } from "./shared.js";

const ROUNDS = 3;

interface Figures {
  streams: number;
  fps: number;
  cpuMsPerFrame: number;
}

/** `streams` decoders at once, each over every GOP, ROUNDS times; the best round. */
async function measure(
  video: Video,
  calls: Packets[],
  streams: number,
  extra: Partial<DecoderOptions>,
): Promise<Figures> {
  const t = video.track;
  const decoders = await Promise.all(
    Array.from({ length: streams }, () =>
      createDecoder({ codec: t.codec, extradata: t.extradata, width: t.width, height: t.height, ...extra }),
    ),
  );
  try {
    await Promise.all(decoders.map((d) => d.decode(calls[0]!)));
    let best: Figures | undefined;
    for (let r = 0; r < ROUNDS; r++) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const counts = await Promise.all(
        decoders.map(async (d) => {
          let n = 0;
          for (const packets of calls) n += (await d.decode(packets)).length;
          return n;
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      const used = process.cpuUsage(cpu0);
      const frames = counts.reduce((a, b) => a + b, 0);
      const figures = { streams, fps: frames / seconds, cpuMsPerFrame: (used.user + used.system) / 1000 / frames };
      if (!best || figures.fps > best.fps) best = figures;
    }
    return best!;
  } finally {
    await Promise.all(decoders.map((d) => d.close()));
  }
}

const round = (f: Figures) => ({
  streams: f.streams,
  fps: Math.round(f.fps * 10) / 10,
  cpuMsPerFrame: Math.round(f.cpuMsPerFrame * 1000) / 1000,
});

export async function bundleBench(
  manifest: Manifest,
  bundle: string,
  d: HostDevices,
  gpuSkip: string | null,
): Promise<Outcome[]> {
  const video = await indexed(join(bundle, "videos", manifest.bench.file));
  const calls = gopCalls(video.track, video.bytes);
  const size = `${video.track.width}x${video.track.height}`;
  const cores = availableParallelism();
  const cpu = round(await measure(video, calls, 1, { device: "cpu", threads: 0 }));
  const outcomes: Outcome[] = [
    {
      status: "pass",
      detail: `cpu decoder (${manifest.bench.codec} ${size}, ${cores} cores): ${cpu.fps} frames/s, ${cpu.cpuMsPerFrame} CPU ms/frame`,
      data: { cpu },
    },
  ];
  if (gpuSkip) return [...outcomes, { status: "skip", detail: `nvdec: ${gpuSkip}` }];
  if (!d.cuda.nvdec.codecs.includes(manifest.bench.codec))
    return [...outcomes, { status: "skip", detail: `nvdec: no hwaccel for ${manifest.bench.codec}` }];
  const one = round(await measure(video, calls, 1, { device: "cuda:0" }));
  const many = round(await measure(video, calls, 8, { device: "cuda:0" }));
  outcomes.push({
    status: "pass",
    detail:
      `nvdec (${d.cuda.devices[0]?.name}): 1 stream ${one.fps} frames/s (${one.cpuMsPerFrame} CPU ms/frame), ` +
      `8 streams ${many.fps} frames/s (${many.cpuMsPerFrame} CPU ms/frame); ` +
      `against the cpu decoder: ${Math.round((many.fps / cpu.fps) * 100) / 100}x the frames/s, ${Math.round((many.cpuMsPerFrame / cpu.cpuMsPerFrame) * 1000) / 1000}x the CPU per frame`,
    data: { nvdec: [one, many], cpu },
  });
  return outcomes;
}
