/**
 * The shuffle's scatter from the epoch order alone (no decode), with bench/coverage.ts's
 * measure: the mean and smallest gap (in epoch positions) between consecutive clips of one GOP,
 * distinct GOPs per batch, and the same gaps for clips of one shard, plus how far the first
 * batches reach across the listing (distinct pages in the first 1 % of the epoch; in its first
 * eighth, the pages and the share of the listing between the first and last of them). `--sampler`
 * loads the sampler from another build (e.g. the main checkout's dist/sdk/sampler), so two epoch
 * orders are measured on the same plan.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/order-scatter.js [--objects 12000] [--per-shard 6] [--sampler DIR] [--json]
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "12000" },
    "per-shard": { type: "string", default: "6" },
    frames: { type: "string", default: "900" },
    gop: { type: "string", default: "300" },
    clip: { type: "string", default: "16" },
    batch: { type: "string", default: "8" },
    sampler: { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const dir = values.sampler ? resolve(values.sampler) : new URL("../sdk/sampler/", import.meta.url).pathname;
const load = (f: string) => import(pathToFileURL(resolve(dir, f)).href);
const { makePlan, clipStarts, gopsOf } = await load("clip-plan.js");
const { epochOrder } = await load("shuffle.js");
const { ORDER_VERSION } = await load("order-version.js");

const n = Number(values.objects);
const perShard = Number(values["per-shard"]);
const frames = Number(values.frames);
const gop = Number(values.gop);
const batch = Number(values.batch);
const sampling = { frames: Number(values.clip), stride: 1, align: "exact" };
const keyframes = Array.from({ length: Math.ceil(frames / gop) }, (_, i) => i * gop);
const starts = clipStarts(frames, keyframes, sampling);
const gops = gopsOf(starts, keyframes, { span: Number(values.clip), frames: 300 });
const objects = Array.from({ length: n }, (_, i) => ({ key: `v${i}`, etag: "e", starts, gops }));
const shards = Array.from({ length: Math.ceil(n / perShard) }, (_, s) => ({
  objects: Array.from({ length: Math.min(perShard, n - s * perShard) }, (_, k) => s * perShard + k),
}));
const plan = makePlan(objects, shards, sampling);
const order: { object: number; start: number }[] = epochOrder(plan, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 });

/** Mean and smallest gap between consecutive positions of each group. */
function gaps(groupOf: (c: { object: number; start: number }) => string): { mean: number; min: number } {
  const last = new Map<string, number>();
  let sum = 0;
  let count = 0;
  let min = Infinity;
  order.forEach((c, p) => {
    const g = groupOf(c);
    const before = last.get(g);
    if (before !== undefined) {
      sum += p - before;
      count++;
      min = Math.min(min, p - before);
    }
    last.set(g, p);
  });
  return { mean: count > 0 ? sum / count : 0, min: count > 0 ? min : 0 };
}

const gopOf = (c: { object: number; start: number }) => `${c.object}:${Math.floor(c.start / gop)}`;
const shardOf = (c: { object: number }) => String(Math.floor(c.object / perShard));
let distinct = 0;
let full = 0;
for (let b = 0; b + batch <= order.length; b += batch, full++)
  distinct += new Set(order.slice(b, b + batch).map(gopOf)).size;
const head = order.slice(0, Math.ceil(order.length / 100));
const eighth = order.slice(0, Math.ceil(order.length / 8)).map((c) => Math.floor(c.object / 1000));
const pageCount = Math.ceil(n / 1000);
const row = {
  order: ORDER_VERSION,
  clips: order.length,
  gop_mean_gap: gaps(gopOf).mean,
  gop_min_gap: gaps(gopOf).min,
  gops_per_batch: distinct / Math.max(1, full),
  shard_mean_gap: gaps(shardOf).mean,
  shards_in_first_percent: new Set(head.map(shardOf)).size,
  pages_in_first_percent: new Set(head.map((c) => Math.floor(c.object / 1000))).size,
  pages_in_first_eighth: new Set(eighth).size,
  listing_span_first_eighth:
    (eighth.reduce((a, b) => Math.max(a, b), 0) - eighth.reduce((a, b) => Math.min(a, b), pageCount) + 1) / pageCount,
};
if (values.json) console.log(JSON.stringify(row));
else
  console.log(
    `order ${row.order}: ${row.clips} clips; GOP mean gap ${row.gop_mean_gap.toFixed(2)} (min ${row.gop_min_gap}), ${row.gops_per_batch.toFixed(2)} GOPs per batch of ${batch}; shard mean gap ${row.shard_mean_gap.toFixed(2)}; first 1 %: ${row.shards_in_first_percent} shards, ${row.pages_in_first_percent} pages; first eighth: ${row.pages_in_first_eighth} of ${pageCount} pages, spanning ${(100 * row.listing_span_first_eighth).toFixed(0)} % of the listing`,
  );
