/** What the stream benches share: their flags and one pass over a dataset with open(). */
import { parseArgs } from "node:util";
import { open, type OpenOptions, type StreamStats } from "../sdk/index.js";

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
