import { tableEntry } from "../../common/dataset-table/entry.js";
import type { TableEntryV1 } from "../../common/schema/index.js";
import { KindUnsupportedError, SdkError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { clipStarts, makePlan, type ClipPlan, type PlannedObject } from "../sampler/clip-plan.js";
import type { DatasetListing } from "../source/source.js";
import type { IndexCache } from "./index-cache.js";
import { orderedMap } from "./ordered-map.js";

/** An object that contributes no clips, and why. */
export interface SkippedObject {
  readonly key: string;
  readonly error: SdkError;
}

/** Clip starts of one object from its table entry; corrupt objects and kinds not streamed are reported in `skipped`. */
function startsOf(key: string, e: TableEntryV1, o: Sampling, skipped: SkippedObject[]): number[] {
  if (e.kind === "video" && e.frames !== undefined && e.keyframes) return clipStarts(e.frames, e.keyframes, o);
  // One .npy or image is one sample; its dtype, layout or pixels are checked when it is read.
  if ((e.kind === "array" && e.frames !== undefined) || (e.kind === "image" && e.width !== undefined)) return [0];
  if (e.kind === "error") {
    const err = e.error ?? { code: "ERR_INDEX_CORRUPT", message: "corrupt object" };
    skipped.push({ key, error: new SdkError(err.code, `${key}: ${err.message}`) });
  } else if (e.kind === "image") {
    // An image index without its header fields: nothing says how to decode it.
    skipped.push({ key, error: new KindUnsupportedError(key, e.kind) });
  }
  return [];
}

type Sampling = Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align">;

/**
 * Lists every object's clips (one per image or .npy). From the dataset table when the listing
 * carries one: no index is read, and open() costs the same for any dataset size. Otherwise
 * each object's index is read and reduced to the same table entry, so both plans are equal.
 * Corrupt objects (kind "error") and kinds not streamed contribute no clips and are reported;
 * a failed index fetch throws, since ranks must agree on one plan. Indexes are fetched
 * `concurrency` at a time: without a table, planning is round trips to the edge
 * (bench/open-plan.ts).
 *
 * @example
 * const { plan, skipped } = await planDataset(listing, indexes, options);
 */
export async function planDataset(
  listing: DatasetListing,
  indexes: IndexCache,
  o: Sampling,
  concurrency = 64,
): Promise<{ plan: ClipPlan; skipped: SkippedObject[] }> {
  const skipped: SkippedObject[] = [];
  const objects: PlannedObject[] = [];
  if (listing.entries) {
    listing.objects.forEach((object, id) => objects.push({ key: object.key, etag: object.etag, starts: startsOf(object.key, listing.entries![id]!, o, skipped) }));
    return { plan: makePlan(objects, listing.shards, o), skipped };
  }
  const ids = listing.objects.map((_, i) => i);
  for await (const planned of orderedMap(ids, concurrency, async (id) => {
    const object = listing.objects[id]!;
    const { index, order } = await indexes.get(id, object);
    const entry = tableEntry(index, order?.keyframes ?? []);
    return { key: object.key, etag: object.etag, starts: startsOf(object.key, entry, o, skipped) };
  })) {
    objects.push(planned);
  }
  return { plan: makePlan(objects, listing.shards, o), skipped };
}
