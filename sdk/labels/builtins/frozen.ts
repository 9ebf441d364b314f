import { z } from "zod";
import { defineLabeler, nonNegative, ratio, round, severity } from "./define.js";

/**
 * Frozen (static) frames: a frame is frozen when its mean absolute luma difference to the
 * previous frame is ≤ `maxDiff`. Pairs of two blank frames (std ≤ `blankStd`) are left to the
 * black labeler, so a black stretch is not also reported frozen.
 *
 * Flag: `frozen` when more than `maxRatio` of the frame pairs are frozen. Fails validation by default.
 */
export const FrozenOptions = z.object({
  maxDiff: nonNegative("maxDiff").default(0.5),
  maxRatio: ratio("maxRatio").default(0.5),
  blankStd: nonNegative("blankStd").default(3),
  severity: severity.default("fail"),
});

export const frozenLabeler = defineLabeler("frozen", 1, FrozenOptions, (o, _frames, _info, ctx) => {
  const stats = ctx.analysis().frames;
  let frozen = 0;
  let run = 0;
  let longest = 0;
  for (let i = 1; i < stats.length; i++) {
    const a = stats[i - 1]!;
    const b = stats[i]!;
    const still = b.diff <= o.maxDiff && !(a.std <= o.blankStd && b.std <= o.blankStd);
    if (still) {
      frozen++;
      run++;
      longest = Math.max(longest, run);
    } else {
      run = 0;
    }
  }
  const pairs = Math.max(1, stats.length - 1);
  const frozenRatio = frozen / pairs;
  // A run of k frozen pairs is k + 1 identical frames.
  return {
    flags: frozenRatio > o.maxRatio ? ["frozen"] : [],
    values: { frozenRatio: round(frozenRatio), longestFrozen: longest === 0 ? 0 : longest + 1 },
  };
});
