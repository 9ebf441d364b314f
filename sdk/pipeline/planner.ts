import { notStreamed } from "../../common/media-index/index.js";
import { relayedCode, SdkError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { clipStarts, gopsOf, makePlan, type ClipPlan, type PlannedObject } from "../sampler/clip-plan.js";
import type { DatasetListing, DatasetSource } from "../source/source.js";
import type { IndexCache } from "./index-cache.js";
import { orderedMap } from "./ordered-map.js";

/** An object that contributes no clips, and why. */
export interface SkippedObject {
  readonly key: string;
  readonly error: SdkError;
}

/**
 * Reads every object's index and lists its clips (one per image or .npy). Corrupt, empty or
 * unreadable objects and kinds not streamed contribute no clips and are reported; a failed
 * index fetch throws, since ranks must agree on one plan. Indexes are fetched `concurrency` at
 * a time: planning a large dataset is round trips to the edge, so the window sets how long
 * open() takes before the first batch (bench/open-plan.ts).
 *
 * @example
 * const { plan, skipped } = await planDataset(listing, indexes, options);
 */
export async function planDataset(
  listing: DatasetListing,
  indexes: IndexCache,
  o: Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align"> & { readonly track?: number },
  concurrency = 64,
): Promise<{ plan: ClipPlan; skipped: SkippedObject[] }> {
  const skipped: SkippedObject[] = [];
  const ids = listing.objects.map((_, i) => i);
  const objects: PlannedObject[] = [];
  for await (const planned of orderedMap(ids, concurrency, async (id) => {
    const object = listing.objects[id]!;
    const { index, order } = await indexes.get(id, object);
    let starts: number[] = [];
    const why = notStreamed(index);
    let gops: number[] | undefined;
    if (why) {
      // Corrupt, empty, unreadable, or a kind not streamed: reported, never dropped without a word.
      skipped[id] = { key: object.key, error: new SdkError(relayedCode(why.code), why.message.startsWith(object.key) ? why.message : `${object.key}: ${why.message}`) };
    } else if (index.video && order) {
      starts = clipStarts(order.decodeOf.length, order.keyframes, o);
      gops = gopsOf(starts, order.keyframes);
    } else {
      // One .npy or image is one sample; its dtype, layout or pixels are checked when it is read.
      starts = [0];
    }
    return { key: object.key, etag: object.etag, starts, ...(gops ? { gops } : {}) };
  })) {
    objects.push(planned);
  }
  // Indexes finish in any order; the listing's order makes the report (and open()'s error) the same every run.
  return { plan: makePlan(objects, listing.shards, o), skipped: skipped.filter(Boolean) };
}
