/**
 * The planner's prefetch of one run of planned blocks: the blocks neither stored nor on their
 * way are pulled, coalesced like a read's, and the run settles once all of them are in.
 */
import type { BlockLookup } from "../core/lookup.js";
import { runsOf } from "../core/runs.js";
import type { AllowList } from "../upstream/allow-list.js";
import type { Pins } from "../upstream/pins.js";
import type { Pulls } from "../upstream/pulls.js";
import type { PlannedBlock } from "./planner.js";

export interface PrefetchRunOptions {
  readonly blockSize: number;
  readonly runBlocks: number;
  readonly allow: AllowList;
  readonly pins: Pins;
  readonly lookup: BlockLookup;
  readonly pulls: Pulls;
  readonly closed: () => boolean;
}

/** Pulls a planned run's blocks that are neither stored nor on their way, coalesced like a read's. */
export async function prefetchRun(o: PrefetchRunOptions, run: readonly PlannedBlock[]): Promise<void> {
  const head = run[0];
  if (o.closed() || !head) return;
  const url = o.allow.check(head.url);
  const pin = await o.pins.pin(url);
  if (o.closed()) return;
  const waits: Promise<Buffer>[] = [];
  const missing: number[] = [];
  for (const { index } of run) {
    if (index * o.blockSize >= pin.size) break;
    const standing = o.lookup.standing(pin, index);
    if (standing.kind === "pulling") waits.push(standing.flight);
    else if (standing.kind === "missing") missing.push(index);
  }
  for (const r of runsOf(missing, o.runBlocks)) waits.push(...o.pulls.pullRun(url, pin, r.first, r.count));
  await Promise.all(waits);
}
