import { z } from "zod";
import { defineLabeler, luma, num, ratio, severity } from "./define.js";

/**
 * Scene cuts inside the clip: a hard cut is a frame whose 32-bin luma histogram moved by at
 * least `minHistDistance` (half L1, 0–1) from the previous frame's AND whose mean absolute
 * difference is at least `minDiff` — either alone fires on fast motion or flashes.
 *
 * Flag: `scene-cut` when the clip holds more than `maxCuts` cuts. Tags only by default.
 */
export const SceneCutOptions = z.object({
  minHistDistance: ratio("minHistDistance").default(0.3),
  minDiff: luma("minDiff").default(12),
  maxCuts: num("maxCuts", "a non-negative integer", (v) => Number.isInteger(v) && v >= 0).default(0),
  severity: severity.default("tag"),
});

export const sceneCutLabeler = defineLabeler("scene-cut", 1, SceneCutOptions, (o, _frames, _info, ctx) => {
  const stats = ctx.analysis().frames;
  const cuts: number[] = [];
  for (let i = 1; i < stats.length; i++) {
    const f = stats[i]!;
    if (f.histDistance >= o.minHistDistance && f.diff >= o.minDiff) cuts.push(i);
  }
  return { flags: cuts.length > o.maxCuts ? ["scene-cut"] : [], values: { cuts: cuts.length, cutFrames: cuts } };
});
