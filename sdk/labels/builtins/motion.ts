import { z } from "zod";
import { defineLabeler, luma, round, severity } from "./define.js";

/**
 * Motion score: the mean absolute luma difference between consecutive frames (0–255), the
 * cheap proxy for how much happens in the clip.
 *
 * Flags: `low-motion` when the score is below `low`, `high-motion` when above `high`. Tags only by default.
 */
export const MotionOptions = z.object({
  low: luma("low").default(0.5),
  high: luma("high").default(64),
  severity: severity.default("tag"),
});

export const motionLabeler = defineLabeler("motion", 1, MotionOptions, (o, _frames, _info, ctx) => {
  const stats = ctx.analysis().frames;
  let sum = 0;
  let max = 0;
  for (let i = 1; i < stats.length; i++) {
    const d = stats[i]!.diff;
    sum += d;
    if (d > max) max = d;
  }
  const motion = stats.length > 1 ? sum / (stats.length - 1) : 0;
  const flags: string[] = [];
  if (stats.length > 1 && motion < o.low) flags.push("low-motion");
  if (motion > o.high) flags.push("high-motion");
  return { flags, values: { motion: round(motion, 3), motionMax: round(max, 3) } };
});
