/**
 * Why a dataset without skipped objects still plans no clip: it holds no object, or every video
 * is shorter than a clip. open() fails with this instead of an iterator that yields nothing.
 */
import { clipSpan, type ResolvedOptions } from "../options.js";
import { SdkError, SdkErrorCode } from "../errors.js";
import type { DatasetListing } from "../source/source.js";
import type { IndexCache } from "./index-cache.js";
import { orderedMap } from "./ordered-map.js";

/** The frame count of each video object (from the table where the listing has one, else from its index). */
async function* videoFrames(
  listing: DatasetListing,
  indexes: IndexCache,
  track: number | undefined,
): AsyncGenerator<{ key: string; frames: number }> {
  const e = listing.entries;
  if (e && !track) {
    for (let id = 0; id < e.length; id++) {
      const frames = e.frames(id);
      if (e.kind(id) === "video" && frames !== undefined) yield { key: e.key(id), frames };
    }
    return;
  }
  const ids = Array.from({ length: listing.objects.length }, (_, i) => i);
  for await (const got of orderedMap(ids, 64, async (id) => ({
    key: listing.objects.at(id)!.key,
    order: (await indexes.get(id, listing.objects.at(id)!)).order,
  }))) {
    if (got.order) yield { key: got.key, frames: got.order.decodeOf.length };
  }
}

/**
 * The typed error for a plan of no clips: how many objects were seen and why none qualified.
 *
 * @example
 * if (plan.total === 0 && skipped.length === 0) throw await noClipsError(listing, indexes, o);
 */
export async function noClipsError(
  listing: DatasetListing,
  indexes: IndexCache,
  o: Pick<ResolvedOptions, "frames" | "stride" | "track">,
): Promise<SdkError> {
  const want = `Expected at least one clip of ${o.frames} frames${o.stride > 1 ? ` at stride ${o.stride} (${clipSpan(o)} frames of video)` : ""}`;
  const n = listing.objects.length;
  if (n === 0)
    return new SdkError(SdkErrorCode.NoClips, `${want} but the dataset holds no objects (an empty folder or prefix?)`);
  let longest: { key: string; frames: number } | undefined;
  // Images and arrays always make a clip: a plan of none holds only videos too short for one.
  let videos = 0;
  for await (const v of videoFrames(listing, indexes, o.track)) {
    videos++;
    if (!longest || v.frames > longest.frames) longest = v;
  }
  const holds = n === 1 ? "the dataset's one object holds none" : `none of the dataset's ${n} objects holds one`;
  const frames = (v: { frames: number }) => `${v.frames} frame${v.frames === 1 ? "" : "s"}`;
  const why = !longest
    ? "none is a video"
    : videos === 1
      ? `${longest.key} has ${frames(longest)}`
      : `the longest of its ${videos} videos, ${longest.key}, has ${frames(longest)}`;
  return new SdkError(SdkErrorCode.NoClips, `${want} but ${holds}: ${why}`);
}
