import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { devices } from "../../../native/index.js";
import { open } from "../../../sdk/index.js";
import { createLabelStage, MemoryLabelCache, type ClipLabels } from "../../../sdk/labels/index.js";
import { corruptFrames, LABEL_MIX, makeSegments } from "./fixtures.js";

// LABEL_MIX clip by clip (16 frames, one GOP each): clean, black, frozen, cut, clean; bad.mp4 breaks the last.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-labels-e2e-"));
  await makeSegments(dir, "mix.mp4", LABEL_MIX);
  await corruptFrames(join(dir, "mix.mp4"), join(dir, "bad.mp4"), 4 * 16 + 4, 4 * 16 + 6);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function stream(stage: ReturnType<typeof createLabelStage>, device: "cpu" | "cuda:0" = "cpu") {
  const kept: { key: string; start: number; labels: ClipLabels }[] = [];
  const errors: { key: string; start: number; code: string }[] = [];
  const ds = await open(dir, {
    frames: 16,
    shuffle: false,
    device,
    workers: 1,
    size: [60, 80],
    ...stage.hooks,
    onError: (err, clip) => errors.push({ key: clip?.key ?? "", start: clip?.start ?? -1, code: err.code }),
  });
  for await (const b of ds)
    for (const c of b.clips) kept.push({ key: c.key, start: c.start, labels: c.labels as ClipLabels });
  await ds.close();
  return { kept, errors };
}

describe("labels in the open() pipeline (native decoder)", () => {
  test('the default "drop" filter lets exactly the valid clips through, tagged', async () => {
    const stage = createLabelStage({ cache: new MemoryLabelCache() });
    const { kept, errors } = await stream(stage);
    const where = kept.map((k) => `${k.key}@${k.start}`).sort();
    expect(where).toEqual(["bad.mp4@0", "bad.mp4@48", "mix.mp4@0", "mix.mp4@48", "mix.mp4@64"]);
    expect(kept.every((k) => k.labels.valid)).toBe(true);
    expect(kept.filter((k) => k.start === 48).every((k) => k.labels.flags.includes("scene-cut"))).toBe(true);
    // The corrupt stretch never reaches a labeler: the decoder refuses the clip and the stream goes on.
    expect(errors.map((e) => `${e.key}@${e.start}`)).toEqual(["bad.mp4@64"]);
  });

  test("a second epoch answers every label from the cache keyed by etag", async () => {
    const cache = new MemoryLabelCache();
    const first = createLabelStage({ cache, filter: "tag" });
    const a = await stream(first);
    expect(first.counts.cached).toBe(0);
    await first.flush();
    const second = createLabelStage({ cache, filter: "tag" });
    const b = await stream(second);
    expect(second.counts).toEqual({ labeled: 0, cached: first.counts.labeled });
    expect(b.kept.map((k) => k.labels)).toEqual(a.kept.map((k) => k.labels));
    expect(a.kept.length).toBe(9); // 2 × 5 clips less the one the decoder refused
  });

  test("open() takes a labels spec itself: thresholds validated up front, invalid clips dropped by default", async () => {
    await expect(open(dir, { labels: { black: { maxRatio: 2 } } })).rejects.toThrow(
      /Expected a number from 0 to 1 for maxRatio but received 2/,
    );
    await expect(open(dir, { labels: 7 as never })).rejects.toThrow(
      /Expected a function, true, a list of labeler names or an object of labeler settings for labels but received 7/,
    );
    await expect(open(dir, { filter: "some" as never })).rejects.toThrow(
      /Expected a function, "drop" or "tag" for filter/,
    );
    const run = async (filter?: "tag") => {
      const ds = await open(dir, {
        frames: 16,
        shuffle: false,
        device: "cpu",
        workers: 1,
        labels: ["black", "frozen"],
        ...(filter ? { filter } : {}),
      });
      const seen: string[] = [];
      for await (const b of ds)
        for (const c of b.clips) seen.push(`${c.key}@${c.start}:${(c.labels as ClipLabels).flags.join("+")}`);
      await ds.close();
      return seen.sort();
    };
    expect(await run()).toEqual(["bad.mp4@0:", "bad.mp4@48:", "mix.mp4@0:", "mix.mp4@48:", "mix.mp4@64:"]);
    expect(await run("tag")).toContain("mix.mp4@16:black");
  });
});

const nvdec = devices().cuda.nvdec;
describe.skipIf(!nvdec.available)(
  `labels on the GPU${nvdec.available ? "" : ` — skipped: ${nvdec.reason ?? "no NVDEC"}`}`,
  () => {
    // The GPU resizes with its own kernel (not libswscale), so values differ a little; flags must not.
    test("a cuda stream labels its clips on the device, with the flags the CPU stream gets", async () => {
      const cpu = await stream(createLabelStage({ cache: false, filter: "tag" }));
      const gpu = await stream(createLabelStage({ cache: false, filter: "tag" }), "cuda:0");
      const mix = (r: typeof cpu) =>
        r.kept.filter((k) => k.key === "mix.mp4").map((k) => [k.start, k.labels.valid, [...k.labels.flags].sort()]);
      expect(mix(gpu)).toEqual(mix(cpu));
    });
  },
);
