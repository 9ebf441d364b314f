import { z } from "zod";
import { defineLabeler, luma, nonNegative, ratio, round, severity } from "./define.js";

/**
 * Letterboxing and pillarboxing: rows (columns) whose mean luma stays ≤ `barLuma` in every
 * non-blank frame of the clip, counted inward from each edge. Positions are in pixels of the
 * frames as handed over, exact to one grid step.
 *
 * Flags: `letterbox` when the top and bottom bars together cover at least `minBars` of the
 * height; `pillarbox` likewise for left and right. Tags only by default.
 */
export const LetterboxOptions = z.object({
  barLuma: luma("barLuma").default(24),
  minBars: ratio("minBars").default(0.08),
  blankStd: nonNegative("blankStd").default(3),
  severity: severity.default("tag"),
});

function bars(maxMeans: Float32Array, limit: number, step: number, size: number): [number, number] {
  const n = maxMeans.length;
  let lead = 0;
  while (lead < n && maxMeans[lead]! <= limit) lead++;
  if (lead === n) return [0, 0]; // all dark: the black labeler's business, not a bar
  let trail = 0;
  while (trail < n && maxMeans[n - 1 - trail]! <= limit) trail++;
  return [Math.min(size, lead * step), trail === 0 ? 0 : size - (n - trail) * step];
}

export const letterboxLabeler = defineLabeler("letterbox", 1, LetterboxOptions, (o, _frames, _info, ctx) => {
  const a = ctx.analysis();
  const content = a.frames.filter((f) => f.std > o.blankStd);
  const first = content[0];
  if (!first) return { flags: [], values: { top: 0, bottom: 0, left: 0, right: 0, activeArea: 1 } };
  const rows = new Float32Array(first.rowMeans.length);
  const cols = new Float32Array(first.colMeans.length);
  for (const f of content) {
    for (let y = 0; y < rows.length; y++) rows[y] = Math.max(rows[y]!, f.rowMeans[y]!);
    for (let x = 0; x < cols.length; x++) cols[x] = Math.max(cols[x]!, f.colMeans[x]!);
  }
  const [top, bottom] = bars(rows, o.barLuma, a.step, a.height);
  const [left, right] = bars(cols, o.barLuma, a.step, a.width);
  const flags: string[] = [];
  if (top + bottom >= o.minBars * a.height && top + bottom > 0) flags.push("letterbox");
  if (left + right >= o.minBars * a.width && left + right > 0) flags.push("pillarbox");
  const activeArea = ((a.height - top - bottom) * (a.width - left - right)) / (a.width * a.height);
  return { flags, values: { top, bottom, left, right, activeArea: round(activeArea) } };
});
