/** What the stream benches share: their flags, their videos and clips, and the rows they run. */
import { parseArgs } from "node:util";
import { open, type OpenOptions, type StreamStats } from "../sdk/index.js";
import { makeVideo } from "../test/helpers/make-video.js";

export function parseStreamBenchArgs() {
  const { values } = parseArgs({
    options: {
      videos: { type: "string", default: "4" },
      frames: { type: "string", default: "240" },
      size: { type: "string", default: "640x360" },
      gop: { type: "string", default: "30" },
      clip: { type: "string", default: "8" },
      clips: { type: "string", default: "48" },
      json: { type: "boolean", default: false },
    },
  });
  const [width, height] = values.size.split("x").map(Number) as [number, number];
  return { values, width, height };
}

/**
 * Encodes `videos` h264 files (`v0.mp4`, `v1.mp4`, …, two B-frames) into `dir` and hands each to
 * `store` (an upload) when given.
 */
export async function makeBenchVideos(
  dir: string,
  o: { videos: number; frames: number; width: number; height: number; gop: number },
  store?: (name: string, file: string) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < o.videos; i++) {
    const name = `v${i}.mp4`;
    const file = await makeVideo(dir, {
      codec: "h264",
      width: o.width,
      height: o.height,
      frames: o.frames,
      gop: o.gop,
      bframes: 2,
      name,
    });
    await store?.(name, file);
  }
}

/** Random exact starts (each clip decodes from its GOP's keyframe), spread over the dataset by "global". */
export function randomClips(values: { clip: string; clips: string }): OpenOptions {
  return {
    frames: Number(values.clip),
    align: "exact",
    shuffle: "global",
    seed: 7,
    limit: Number(values.clips),
    device: "cpu",
    format: "native",
    batch: 4,
  };
}

/** Iterates the whole dataset once; returns its stats and the delivered clip ids in order. */
export async function iterate(url: string, options: OpenOptions): Promise<{ stats: StreamStats; ids: string[] }> {
  const ds = await open(url, options);
  const ids: string[] = [];
  try {
    for await (const b of ds) ids.push(...b.clips.map((c) => `${c.key.split("/").at(-1)}@${c.start}`));
  } finally {
    await ds.close();
  }
  return { stats: ds.stats(), ids };
}

/**
 * The same clips from the local files, from `url`, and from the local files again: the two local
 * rows bracket the remote one on a noisy machine, and their mean is the local figure.
 */
export async function bracketedRows(
  files: string,
  url: string,
  clips: OpenOptions,
  remoteOptions: OpenOptions,
): Promise<{ remote: { stats: StreamStats; ids: string[] }; sameClips: boolean; localFps: number; remoteFps: number }> {
  const local1 = await iterate(files, clips);
  const remote = await iterate(url, { ...clips, ...remoteOptions });
  const local2 = await iterate(files, clips);
  const fps = (s: StreamStats) => s.frames / s.seconds;
  return {
    remote,
    sameClips: JSON.stringify(local1.ids) === JSON.stringify(remote.ids),
    localFps: (fps(local1.stats) + fps(local2.stats)) / 2,
    remoteFps: fps(remote.stats),
  };
}
