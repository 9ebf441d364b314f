/**
 * GOP runs across ranks: with world 4 each rank decodes the GOPs its clips touch about once
 * (decoded_frames / frames near 1.1 per rank), where dealing clips round-robin made every rank
 * decode nearly every GOP. Real decode of ffmpeg-made video with long GOPs.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVideo } from "../../helpers/make-video.js";
import { open } from "../../../sdk/index.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-gop-ranks-"));
  for (let i = 0; i < 8; i++)
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 300, gop: 60, bframes: 2, name: `v${i}.mp4` });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("GOP runs across ranks", () => {
  it("keeps each rank's decoded frames per delivered frame far below round-robin's with world 4, every clip once", async () => {
    const world = 4;
    const seen: string[] = [];
    const ratios: number[] = [];
    let total = 0;
    for (let rank = 0; rank < world; rank++) {
      // One decode worker: which clip of a GOP run reaches the decoder first is then fixed, so the
      // count measures the partition, not the scheduling of parallel decodes.
      const ds = await open(dir, { device: "cpu", frames: 8, batch: 4, seed: 2, rank, world, workers: 1 });
      total = ds.totalClips;
      for await (const b of ds) for (const c of b.clips) seen.push(`${c.key}@${c.start}`);
      const s = ds.stats();
      ratios.push(s.decoded_frames / s.frames);
      await ds.close();
    }
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    // Round-robin dealing gives 2.79 here. The partition gives 1.06-1.13 on an idle machine; a
    // GOP run is sometimes decoded again when its clips' decodes overlap in time, so a loaded
    // machine reads up to 1.21. The 1.15 target itself is a benchmark's (bench/coverage.ts).
    for (const r of ratios) expect(r).toBeLessThanOrEqual(1.5);
  });
});
