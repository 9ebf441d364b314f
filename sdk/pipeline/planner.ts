import { KindUnsupportedError, SdkError } from "../errors.js";
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
 * Reads every object's index and lists its clips (one per image or .npy). Corrupt objects (an
 * index of kind "error") and kinds not streamed contribute no clips and are reported; a failed
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
  o: Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align">,
  concurrency = 64,
): Promise<{ plan: ClipPlan; skipped: SkippedObject[] }> {
  const skipped: SkippedObject[] = [];
  const ids = listing.objects.map((_, i) => i);
  const objects: PlannedObject[] = [];
  for await (const planned of orderedMap(ids, concurrency, async (id) => {
    const object = listing.objects[id]!;
    const { index, order } = await indexes.get(id, object);
    let starts: number[] = [];
    let gops: number[] | undefined;
    if (index.kind === "video" && index.video && order) {
      starts = clipStarts(index.video.samples.pts.length, order.keyframes, o);
      gops = gopsOf(starts, order.keyframes);
    } else if ((index.kind === "array" && index.array) || (index.kind === "image" && index.image)) {
      // One .npy or image is one sample; its dtype, layout or pixels are checked when it is read.
      starts = [0];
    } else if (index.kind === "error") {
      const e = index.error ?? { code: "ERR_INDEX_CORRUPT", message: "corrupt object" };
      skipped.push({ key: object.key, error: new SdkError(e.code, `${object.key}: ${e.message}`) });
    } else if (index.kind === "image") {
      // An image index without its header fields: nothing says how to decode it.
      skipped.push({ key: object.key, error: new KindUnsupportedError(object.key, index.kind) });
    }
    return { key: object.key, etag: object.etag, starts, ...(gops ? { gops } : {}) };
  })) {
    objects.push(planned);
  }
  return { plan: makePlan(objects, listing.shards, o), skipped };
}
