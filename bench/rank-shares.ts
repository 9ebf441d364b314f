/**
 * How a world of ranks shares GOP runs over a plan read page by page (StreamedGopClips over
 * "shard-buffer", the lazy open's deal), from the sampler alone, on one in-memory plan: every
 * rank's whole share (the smallest and largest, in clips), every clip dealt once, and what each
 * rank walks of the order before its first batch (positions taken from the order, mean and
 * largest over the ranks) with the CPU of all ranks' first batches in this process. `--sampler`
 * loads the sampler from another build (e.g. the main checkout's dist/sdk/sampler), so two deals
 * are measured on the same plan.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/rank-shares.js [--objects 4000] [--world 512] [--frames 24] [--gop 6] [--clip 16] [--batch 8] [--sampler DIR] [--json]
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "4000" },
    world: { type: "string", default: "512" },
    frames: { type: "string", default: "24" },
    gop: { type: "string", default: "6" },
    clip: { type: "string", default: "16" },
    batch: { type: "string", default: "8" },
    "per-shard": { type: "string", default: "6" },
    sampler: { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const dir = values.sampler ? resolve(values.sampler) : new URL("../sdk/sampler/", import.meta.url).pathname;
const load = (f: string) => import(pathToFileURL(resolve(dir, f)).href);
const { clipStarts, gopsOf, PAGE_OBJECTS } = await load("clip-plan.js");
const { LazyPlan, PageWait } = await load("paged-plan.js");
const { pagedStream } = await load("shuffle.js");
const { StreamedGopClips } = await load("streamed-gop-clips.js");
const { ORDER_VERSION } = await load("order-version.js");
const { PositionSet } = await import(pathToFileURL(resolve(dir, "../state/checkpoint.js")).href);

const n = Number(values.objects);
const world = Number(values.world);
const frames = Number(values.frames);
const gop = Number(values.gop);
const clip = Number(values.clip);
const batch = Number(values.batch);
const perShard = Number(values["per-shard"]);
const sampling = { frames: clip, stride: 1, align: "exact" };
const keyframes = Array.from({ length: Math.ceil(frames / gop) }, (_, i) => i * gop);
const starts: number[] = clipStarts(frames, keyframes, sampling);
const gops: number[] = gopsOf(starts, keyframes, { span: clip, frames: 300 });
const counts = Array.from({ length: Math.ceil(n / PAGE_OBJECTS) }, (_, k) =>
  Math.min(PAGE_OBJECTS, n - k * PAGE_OBJECTS),
);
const page = (k: number) => {
  const objects = Array.from({ length: counts[k]! }, (_, j) => ({ key: `p${k}/v${j}`, etag: "e", starts, gops }));
  const shards = Array.from({ length: Math.ceil(counts[k]! / perShard) }, (_, s) =>
    Array.from({ length: Math.min(perShard, counts[k]! - s * perShard) }, (_, i) => s * perShard + i),
  );
  return { objects, shards };
};
const plan = () => new LazyPlan(counts, async (k: number) => page(k));
const params = { seed: 1, epoch: 0, buffer: 256 };

type Clip = { position: number } | undefined;
interface Deal {
  ready(i: number): Promise<void>;
  at(i: number): Clip;
}
/** A rank's deal over its own plan, and how many positions it took from the order so far. */
function rank(r: number): { deal: Deal; walked: () => number } {
  const p = plan();
  let walked = 0;
  const order = function* () {
    for (const item of pagedStream(p, "shard-buffer", params)) {
      if (!(item instanceof PageWait)) walked++;
      yield item;
    }
  };
  return { deal: new StreamedGopClips(order, new PositionSet(Infinity), p, r, world), walked: () => walked };
}

// The first batches, every rank's, as ranks starting at once in one process do.
const c0 = process.cpuUsage();
const t0 = performance.now();
const walks = await Promise.all(
  Array.from({ length: world }, async (_, r) => {
    const { deal, walked } = rank(r);
    for (let i = 0; i < batch; i++) await deal.ready(i);
    deal.at(batch - 1);
    return walked();
  }),
);
const cu = process.cpuUsage(c0);
const firstMs = performance.now() - t0;

// Whole shares, one rank after another.
const sizes: number[] = [];
const seen = new Set<number>();
let dealt = 0;
for (let r = 0; r < world; r++) {
  const { deal } = rank(r);
  let i = 0;
  for (;;) {
    await deal.ready(i);
    const c = deal.at(i);
    if (!c) break;
    seen.add(c.position);
    dealt++;
    i++;
  }
  sizes.push(i);
}
const out = {
  order: ORDER_VERSION,
  objects: n,
  clips_per_object: starts.length,
  world,
  clips: dealt,
  every_clip_once: seen.size === dealt && Math.max(...seen) === dealt - 1,
  share_min: Math.min(...sizes),
  share_max: Math.max(...sizes),
  first_batch_walk_mean: Math.round(walks.reduce((a, b) => a + b, 0) / world),
  first_batch_walk_max: Math.max(...walks),
  first_batch_cpu_ms: Math.round((cu.user + cu.system) / 1000),
  first_batch_ms: Math.round(firstMs),
};
console.log(values.json ? JSON.stringify(out) : out);
