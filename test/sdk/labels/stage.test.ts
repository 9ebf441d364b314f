import { mkdtemp, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  createLabelStage,
  DirLabelCache,
  MemoryLabelCache,
  sidecarPath,
  type VideoFrame,
} from "../../../sdk/labels/index.js";

const black: VideoFrame[] = Array.from({ length: 4 }, () => ({
  format: "gray",
  width: 8,
  height: 8,
  data: new Uint8Array(64),
}));
const info = { key: "v/a.mp4", etag: '"0123abcd"', start: 16, frames: 4, stride: 2 };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-label-stage-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("label stage", () => {
  test("a clip is labeled once per (etag, clip, config); later epochs read the cache", async () => {
    const cache = new MemoryLabelCache();
    const stage = createLabelStage({ cache });
    const first = await stage.label(info, black);
    await stage.flush();
    const again = await stage.label(info, black);
    expect(again).toEqual(first);
    expect(stage.counts).toEqual({ labeled: 1, cached: 1 });
    expect(await stage.lookup(info)).toEqual(first);
    expect(await stage.lookup({ ...info, etag: '"ffff0000"' })).toBeUndefined();
    expect(await stage.lookup({ ...info, start: 0 })).toBeUndefined();
    // Other thresholds are another configuration: nothing is reused.
    const other = createLabelStage({ cache, labels: { black: { maxRatio: 1 } } });
    expect(other.config).not.toBe(stage.config);
    expect(await other.lookup(info)).toBeUndefined();
  });

  test("a clip without an etag is labeled every time, never cached under a name alone", async () => {
    const cache = new MemoryLabelCache();
    const stage = createLabelStage({ cache });
    const { etag: _, ...noEtag } = info;
    await stage.label(noEtag, black);
    await stage.label(noEtag, black);
    expect(stage.counts).toEqual({ labeled: 2, cached: 0 });
    expect(cache.size).toBe(0);
  });

  test("sidecars in a directory serve another process's stage (another rank)", async () => {
    const a = createLabelStage({ cache: new DirLabelCache(dir) });
    const labels = await a.label(info, black);
    await a.flush();
    const b = createLabelStage({ cache: new DirLabelCache(dir) });
    expect(await b.label(info, black)).toEqual(labels);
    expect(b.counts).toEqual({ labeled: 0, cached: 1 });
    expect(labels.flags).toContain("black");
  });

  test("a damaged sidecar is a miss and gets rewritten", async () => {
    const stage = createLabelStage({ cache: new DirLabelCache(dir), context: "damaged" });
    const file = join(dir, "_ec", "labels", `${sidecarPath({ ...info, config: stage.config })}.json`);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, "{not json");
    await stage.label(info, black);
    await stage.flush();
    expect(stage.counts).toEqual({ labeled: 1, cached: 0 });
    const fresh = createLabelStage({ cache: new DirLabelCache(dir), context: "damaged" });
    await fresh.label(info, black);
    expect(fresh.counts.cached).toBe(1);
  });

  test("a failing cache is reported and bypassed", async () => {
    const errors: unknown[] = [];
    const broken = {
      get: async () => {
        throw new Error("down");
      },
      put: async () => {
        throw new Error("down");
      },
    };
    const stage = createLabelStage({ cache: broken, onCacheError: (e) => errors.push(e) });
    const labels = await stage.label(info, black);
    await stage.flush();
    expect(labels.valid).toBe(false);
    expect(errors).toHaveLength(2);
  });

  test("hooks accept a [T, H, W, C] tensor and filter on the labels they produced", async () => {
    const stage = createLabelStage({ labels: ["black"], filter: "drop", cache: false });
    const tensor = { data: new Uint8Array(4 * 8 * 8 * 3).map((_, i) => (i * 7) % 256), shape: [4, 8, 8, 3] };
    const bright = await stage.hooks.labels(info, tensor);
    expect(await stage.hooks.filter({ ...info, labels: bright })).toBe(true);
    const dark = await stage.hooks.labels(info, { data: new Uint8Array(4 * 8 * 8 * 3), shape: [4, 8, 8, 3] });
    expect(await stage.hooks.filter({ ...info, labels: dark })).toBe(false);
    await expect(stage.hooks.labels(info, 42)).rejects.toThrow(
      /Expected a list of frames or a \[T, H, W, C\] tensor but received 42/,
    );
    expect(() => createLabelStage({ filter: "maybe" as never })).toThrow(
      /Expected "drop", "tag" or a function for filter/,
    );
  });
});
