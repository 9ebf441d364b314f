/**
 * The last step of `ec demo` (`npm start`): start an origin-cache in front of the local edge and
 * stream the pushed dataset through it — manifest, indexes, ranges, decode, resize, batches —
 * with the live progress bar and a summary, then stop the cache.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCache } from "../../origin-cache/index.js";
import type { StreamStats } from "../stats.js";
import { streamWithProgress, summaryLine } from "./stream.js";

export interface DemoStream {
  readonly cache: string;
  readonly stats: StreamStats;
  /** True when the stream ran to its end and delivered clips. */
  readonly ok: boolean;
}

/**
 * @example
 * const { stats, ok } = await streamDemo({ url: edge.url, token: edge.token }, "demo", say);
 */
export async function streamDemo(edge: { url: string; token: string }, prefix: string, say: (line: string) => void): Promise<DemoStream> {
  const dir = await mkdtemp(join(tmpdir(), "ec-demo-cache-"));
  const svc = await startCache({ upstreams: [edge.url], dir, maxBytes: 512 << 20, blockSize: 256 << 10, logLevel: "silent" });
  try {
    say(`origin-cache is up at ${svc.url}; streaming ${prefix}: 8-frame clips, resized to 112x112, batches of 4`);
    const url = `${edge.url}/v1/datasets/${prefix.split("/").map(encodeURIComponent).join("/")}`;
    const { stats, failed } = await streamWithProgress(url, { token: edge.token, cache: svc.url, frames: 8, size: [112, 112], batch: 4, device: "auto" });
    for (const line of summaryLine(stats).split("\n")) say(line);
    if (failed) say(`stream failed: ${(failed as Error).message}`);
    return { cache: svc.url, stats, ok: !failed && stats.clips > 0 };
  } finally {
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  }
}
