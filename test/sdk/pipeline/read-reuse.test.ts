import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open, type OpenOptions } from "../../../sdk/index.js";
import { LocalDirSource, type DatasetObject } from "../../../sdk/source/index.js";
import { ReadPool } from "../../../common/read-pool.js";

let dir: string;
const md5s = new Map<string, string[]>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-reuse-"));
  await makeVideo(dir, { codec: "h264", width: 96, height: 64, frames: 120, gop: 30, bframes: 3, name: "a.mp4" });
  await makeVideo(dir, { codec: "hevc", width: 96, height: 64, frames: 60, gop: 30, bframes: 2, name: "b.mp4" });
  for (const k of ["a.mp4", "b.mp4"]) md5s.set(k, await ffmpegFrameMd5s(join(dir, k)));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Reads as the cache clients do: into pooled memory, poisoned when handed back. */
class PooledSource extends LocalDirSource {
  readonly pool = new ReadPool(8 << 20, { poison: true });
  reads = 0;
  override async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    const bytes = await super.read(object, offset, length);
    const out = this.pool.take(bytes.length);
    out.set(bytes);
    this.reads++;
    return out;
  }
}

async function stream(options: OpenOptions, openRun?: false) {
  const source = new PooledSource(dir);
  const ds = await open(
    dir,
    { format: "native", device: "cpu", workers: 2, frames: 8, batch: 4, ...options },
    { source, ...(openRun === false ? { openRun } : {}) },
  );
  let checked = 0;
  for await (const b of ds) checked += expectFramesMatch(b, (key) => md5s.get(key));
  return { checked, clips: ds.clipCount, pool: source.pool.stats(), reads: source.reads };
}

describe("span reads in pooled memory", () => {
  it("are handed back once GOP runs decoded them: ffmpeg's frames, and most reads reuse memory", async () => {
    const { checked, clips, pool, reads } = await stream({ align: "exact" });
    expect(checked).toBe(clips * 8);
    expect(pool.reuses + pool.allocations).toBe(reads);
    expect(pool.reuses).toBeGreaterThan(reads / 2);
    expect(pool.idleBytes).toBeLessThanOrEqual(8 << 20);
  });

  it("are handed back once a clip decoded on its own: ffmpeg's frames, and most reads reuse memory", async () => {
    const { checked, clips, pool, reads } = await stream({ align: "exact" }, false);
    expect(checked).toBe(clips * 8);
    expect(pool.reuses).toBeGreaterThan(reads / 2);
  });
});
