/**
 * The rank partition at scale: positions of an epoch of `--clips` clips dealt to rank 3 of 8,
 * round-robin (no GOP shared) against GOP runs of `--run` clips kept on one rank, side by side.
 * Then what open() pays for rank 3's first clips of a "shard-buffer" epoch of `--plan-clips`
 * clips in such runs: the whole order materialised and partitioned (before) against the
 * streamed deal (GopRankClips), side by side.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/partition-scale.js [--clips 10000000] [--run 19] [--plan-clips 1000000]
 */
import { parseArgs } from "node:util";
import { gopsOf, makePlan } from "../sdk/sampler/clip-plan.js";
import { GopRankClips } from "../sdk/sampler/gop-rank-clips.js";
import { gopGroups, partition, planRuns } from "../sdk/sampler/partition.js";
import { epochStream } from "../sdk/sampler/shuffle.js";
import { PositionSet } from "../sdk/state/checkpoint.js";

const { values } = parseArgs({
  options: {
    clips: { type: "string", default: "10000000" },
    run: { type: "string", default: "19" },
    "plan-clips": { type: "string", default: "1000000" },
  },
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

// Objects of three GOPs of `run` clips each, 100 objects to a shard.
const perObject = 3 * run;
const objects = Array.from({ length: Math.ceil(Number(values["plan-clips"]) / perObject) }, (_, i) => {
  const starts = Array.from({ length: perObject }, (_, c) => c * 4);
  return { key: `o-${i}.mp4`, etag: "e", starts, gops: gopsOf(starts, [0, run * 4, run * 8]) };
});
const shards = [];
for (let i = 0; i < objects.length; i += 100)
  shards.push({ objects: Array.from({ length: Math.min(100, objects.length - i) }, (_, k) => i + k) });
const plan = makePlan(objects, shards, { frames: 4, stride: 1, align: "exact", hop: 4 });
const params = { seed: 1, epoch: 0, buffer: 256 };
const first = 8 + 4 * 32;
const t0 = performance.now();
const order = [...epochStream(plan, "shard-buffer", params)];
const before = partition(
  new PositionSet(plan.total).remaining(),
  3,
  8,
  gopGroups(plan, (p) => order[p]!),
)
  .slice(0, first)
  .map((position) => ({ position, ref: order[position]! }));
const t1 = performance.now();
const mine = new GopRankClips(
  () => epochStream(plan, "shard-buffer", params),
  new PositionSet(plan.total),
  planRuns(plan)!,
  3,
  8,
);
const streamed = Array.from({ length: first }, (_, i) => mine.at(i)!);
const t2 = performance.now();
if (JSON.stringify(streamed) !== JSON.stringify(before)) throw new Error("the streamed deal differs from partition's");
process.stdout.write(
  `${JSON.stringify({ plan_clips: plan.total, run, first_clips: first, materialised_ms: Math.round(t1 - t0), streamed_ms: Math.round(t2 - t1), materialised_vs_streamed: (t1 - t0) / (t2 - t1) })}\n`,
);
