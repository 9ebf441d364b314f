import { z } from "zod";
import { fractionAtMost } from "../analysis.js";
import { defineLabeler, luma, nonNegative, ratio, round, severity } from "./define.js";

/**
 * Black and blank frames. A frame is black when at least `minDarkFraction` of its pixels have
 * luma ≤ `pixelLuma` (as ffmpeg's blackdetect counts); blank when it is uniform (luma standard
 * deviation ≤ `blankStd`) without being black, e.g. a solid gray or color card.
 *
 * Flags: `black` when more than `maxRatio` of the frames are black; `blank` when more than
 * `maxRatio` are black or blank together but not black alone. Fails validation by default.
 */
export const BlackOptions = z.object({
  pixelLuma: luma("pixelLuma").default(32),
  minDarkFraction: ratio("minDarkFraction").default(0.98),
  blankStd: nonNegative("blankStd").default(3),
  maxRatio: ratio("maxRatio").default(0.5),
  severity: severity.default("fail"),
});

export const blackLabeler = defineLabeler("black", 1, BlackOptions, (o, _frames, _info, ctx) => {
  const stats = ctx.analysis().frames;
  let black = 0;
  let blank = 0;
  let lumaSum = 0;
  for (const f of stats) {
    lumaSum += f.mean;
    if (fractionAtMost(f, o.pixelLuma) >= o.minDarkFraction) black++;
    else if (f.std <= o.blankStd) blank++;
  }
  const n = Math.max(1, stats.length);
  const blackRatio = black / n;
  const blankRatio = blank / n;
  const flags: string[] = [];
  if (blackRatio > o.maxRatio) flags.push("black");
  else if (blackRatio + blankRatio > o.maxRatio) flags.push("blank");
  return {
    flags,
    values: { blackRatio: round(blackRatio), blankRatio: round(blankRatio), meanLuma: round(lumaSum / n, 2) },
  };
});
