import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  createLabelStage,
  labelClip,
  resolveLabelers,
  type ClipLabels,
  type LabelsSpec,
} from "../../../sdk/labels/index.js";
import { clipsOf, corruptFrames, decodeGray, makeSegments, type DecodedVideo, type Segment } from "./fixtures.js";

const CLIP = 16;
// One clip per segment row: what each clip holds and which flags it must get, no more, no less.
const LAYOUT: { segments: Segment[]; flags: string[] }[] = [
  { segments: [{ kind: "testsrc", frames: 16 }], flags: [] },
  { segments: [{ kind: "black", frames: 16 }], flags: ["black", "low-motion"] },
  { segments: [{ kind: "still", frames: 16 }], flags: ["frozen", "low-motion"] },
  {
    segments: [
      { kind: "testsrc", frames: 8 },
      { kind: "mandelbrot", frames: 8 },
    ],
    flags: ["scene-cut"],
  },
  { segments: [{ kind: "letterbox", frames: 16, bar: 16 }], flags: ["letterbox"] },
  { segments: [{ kind: "mandelbrot", frames: 16 }], flags: [] },
  { segments: [{ kind: "gray", frames: 16 }], flags: ["blank", "low-motion"] },
  { segments: [{ kind: "testsrc", frames: 16 }], flags: [] },
];
const TOTAL = LAYOUT.length * CLIP;
const CORRUPT_CLIP = 7; // frames 116–118 of the last (clean) clip are overwritten in bad.mp4
const FAILING = new Set(["black", "blank", "frozen", "missing-frames", "corrupt-frames", "decode-error"]);

let dir: string;
let clean: DecodedVideo;
let corrupt: DecodedVideo;
let cleanRgb: DecodedVideo;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-labels-"));
  const file = await makeSegments(
    dir,
    "mix.mp4",
    LAYOUT.flatMap((c) => c.segments),
  );
  await corruptFrames(file, join(dir, "bad.mp4"), CORRUPT_CLIP * CLIP + 4, CORRUPT_CLIP * CLIP + 6);
  [clean, corrupt, cleanRgb] = await Promise.all([
    decodeGray(file, dir),
    decodeGray(join(dir, "bad.mp4"), dir),
    decodeGray(file, dir, "rgb24"),
  ]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function labelAll(
  video: DecodedVideo,
  spec: LabelsSpec = true,
  format: "gray" | "rgb24" = "gray",
  gridSamples?: number,
): Promise<ClipLabels[]> {
  const labelers = resolveLabelers(spec);
  const out: ClipLabels[] = [];
  for (const c of clipsOf(video, "mix.mp4", CLIP, TOTAL, format))
    out.push(await labelClip(c.frames, c.info, labelers, { gridSamples }));
  return out;
}

describe("built-in labelers on ffmpeg-made video", () => {
  test("each clip gets exactly its known flags; clean clips get none and stay valid", async () => {
    const labels = await labelAll(clean);
    expect(labels.map((l) => [...l.flags].sort())).toEqual(LAYOUT.map((c) => [...c.flags].sort()));
    for (const [i, l] of labels.entries())
      expect(l.valid, `clip ${i}`).toBe(!LAYOUT[i]!.flags.some((f) => FAILING.has(f)));
  });

  test("the measurements behind the flags are where the video puts them", async () => {
    const labels = await labelAll(clean);
    expect(labels[1]!.results.black!.values.blackRatio).toBe(1);
    expect(labels[2]!.results.frozen!.values.frozenRatio).toBe(1);
    expect(labels[2]!.results.frozen!.values.longestFrozen).toBe(16);
    expect(labels[3]!.results["scene-cut"]!.values.cutFrames).toEqual([8]);
    expect(labels[4]!.results.letterbox!.values).toMatchObject({ top: 16, bottom: 16, left: 0, right: 0 });
    expect(labels[0]!.results.motion!.values.motion).toBeGreaterThan(1);
  });

  test("a corrupt stretch flags only the clip it falls in, with the frames the decoder dropped", async () => {
    const labels = await labelAll(corrupt, ["integrity"]);
    const flagged = labels.flatMap((l, i) => (l.flags.length ? [i] : []));
    expect(flagged).toEqual([CORRUPT_CLIP]);
    expect(labels[CORRUPT_CLIP]!.results.integrity!.values.missingFrames).toBe(3);
    expect(labels[CORRUPT_CLIP]!.valid).toBe(false);
  });

  test("rgb24 frames give the same flags as the luma plane", async () => {
    const gray = await labelAll(clean);
    const rgb = await labelAll(cleanRgb, true, "rgb24");
    expect(rgb.map((l) => l.flags)).toEqual(gray.map((l) => l.flags));
  });

  test("subsampling (the default grid) gives the same verdicts as reading every pixel", async () => {
    const full = await labelAll(clean, true, "gray", 0);
    const coarse = await labelAll(clean, true, "gray", 1200);
    expect(coarse.map((l) => l.flags)).toEqual(full.map((l) => l.flags));
  });

  test("conformance flags every clip of a video that is not the dataset's resolution or rate", async () => {
    const wrongSize = await labelAll(clean, { conformance: { width: 320, height: 240 } });
    expect(wrongSize.every((l) => l.flags.includes("resolution-mismatch") && !l.valid)).toBe(true);
    const wrongFps = await labelAll(clean, { conformance: { fps: 30 } });
    expect(wrongFps.every((l) => l.flags.join() === "fps-mismatch")).toBe(true);
    const fits = await labelAll(clean, {
      conformance: { width: 160, height: 120, fps: 25, minDuration: 1, maxDuration: 10 },
    });
    expect(fits.every((l) => l.valid && l.flags.length === 0)).toBe(true);
    const tooShort = await labelAll(clean, { conformance: { minDuration: 60 } });
    expect(tooShort.every((l) => l.flags.join() === "duration-out-of-range")).toBe(true);
  });

  test("thresholds are honored: a stricter black ratio still passes a clip with no black frame", async () => {
    const labels = await labelAll(clean, { black: { maxRatio: 0 } });
    expect(labels.flatMap((l, i) => (l.flags.includes("black") ? [i] : []))).toEqual([1]);
    const lenient = await labelAll(clean, { frozen: { maxRatio: 1 } });
    expect(lenient[2]!.flags).toEqual([]);
  });
});

describe("filter policy over the stage hooks", () => {
  async function kept(filter: "drop" | "tag", video: DecodedVideo): Promise<number[]> {
    const stage = createLabelStage({ filter });
    const out: number[] = [];
    for (const [i, c] of clipsOf(video, "mix.mp4", CLIP, TOTAL).entries()) {
      const labels = await stage.hooks.labels(c.info, c.frames);
      if (await stage.hooks.filter({ ...c.info, labels })) out.push(i);
    }
    return out;
  }

  test('"drop" drops exactly the clips that fail validation', async () => {
    expect(await kept("drop", clean)).toEqual([0, 3, 4, 5, 7]);
    expect(await kept("drop", corrupt)).toEqual([0, 3, 4, 5]);
  });

  test('"tag" keeps every clip', async () => {
    expect(await kept("tag", corrupt)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
