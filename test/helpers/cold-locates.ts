/**
 * A cold stream through a real origin-cache on loopback (the local data plane), counting the
 * locates it sends: the check that a stream's reads find their spans in the plan's batches.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { startCache } from "../../origin-cache/index.js";
import { open, type OpenOptions } from "../../sdk/index.js";
import { expectFramesMatch } from "./ffmpeg-md5.js";
import type { MakeVideoOptions } from "./make-video.js";

/** The videos a cold-locates check streams: keyframe-aligned clips of 8 frames, 8 a video. */
export const COLD_VIDEO: MakeVideoOptions = { codec: "h264", width: 160, height: 120, frames: 64, gop: 8, bframes: 2 };

/**
 * Streams `dataset` (videos made with COLD_VIDEO, ffmpeg's md5s by key in `md5s`) cold through a
 * fresh cache in front of `upstream`, checks every frame, and expects at most one locate per plan
 * window's batch, and one spare.
 *
 * @example
 * await expectLocatesPerWindow(edge.url, `${edge.url}/v1/datasets/cold`, { token }, md5s);
 */
export async function expectLocatesPerWindow(
  upstream: string,
  dataset: string,
  options: OpenOptions,
  md5s: ReadonlyMap<string, string[]>,
): Promise<void> {
  const cacheDir = await mkdtemp(join(tmpdir(), "ec-cold-locates-"));
  // Blocks of 4 KiB: a run's reads past its clip's span mostly lie in blocks of their own.
  const svc = await startCache({
    upstreams: [upstream],
    dir: cacheDir,
    maxBytes: 64 << 20,
    blockSize: 4096,
    logLevel: "silent",
  });
  try {
    const prefetch = 2;
    const ds = await open(dataset, {
      ...options,
      cache: svc.url,
      device: "cpu",
      format: "native",
      frames: 8,
      batch: 2,
      prefetch,
    });
    let frames = 0;
    for await (const b of ds) frames += expectFramesMatch(b, (key) => md5s.get(key)!);
    await ds.close();
    expect(ds.clipCount).toBe(md5s.size * 8);
    expect(frames).toBe(ds.clipCount * 8);
    // A window of 4 × prefetch clips goes out every 2 × prefetch clips, the first one twice.
    const windows = Math.ceil(ds.clipCount / (2 * prefetch)) + 1;
    expect(svc.stats().locates).toBeLessThanOrEqual(windows + 1);
  } finally {
    await svc.close();
    await rm(cacheDir, { recursive: true, force: true });
  }
}
