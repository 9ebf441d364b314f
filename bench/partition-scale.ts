/**
 * The rank partition at scale: positions of an epoch of `--clips` clips dealt to rank 3 of 8,
 * round-robin (no GOP shared) against GOP runs of `--run` clips kept on one rank, side by side.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/partition-scale.js [--clips 10000000] [--run 19]
 */
import { parseArgs } from "node:util";
import { partition } from "../sdk/sampler/partition.js";

const { values } = parseArgs({
  options: { clips: { type: "string", default: "10000000" }, run: { type: "string", default: "19" } },
});
const n = Number(values.clips);
const run = Number(values.run);
const remaining = Array.from({ length: n }, (_, i) => i);
const rss0 = process.memoryUsage().rss;
const time = (f: () => number[]) => {
  const t = performance.now();
  const out = f();
  return { ms: performance.now() - t, clips: out.length };
};
const rr = time(() => partition(remaining, 3, 8));
const grouped = time(() => partition(remaining, 3, 8, { count: Math.ceil(n / run), of: (p) => Math.floor(p / run) }));
process.stdout.write(
  `${JSON.stringify({ clips: n, run, round_robin_ms: Math.round(rr.ms), grouped_ms: Math.round(grouped.ms), grouped_vs_round_robin: grouped.ms / rr.ms, rank_clips: grouped.clips, rss_growth_mb: Math.round((process.memoryUsage().rss - rss0) / 1e6) })}\n`,
);
