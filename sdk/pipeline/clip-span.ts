/** The bytes a video clip needs, from its object's index: what its decode reads and the plan asks for. */
import { objectOf } from "../source/source.js";
import { indexError, KindUnsupportedError } from "../errors.js";
import { clipFrames, type ClipRef } from "../sampler/clip-plan.js";
import { decodeSpan, type DecodeSpan } from "../sampler/frame-order.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import type { ClipContext } from "./clip-context.js";
import { runSpan } from "./gop-decode.js";
import type { PreparedIndex } from "./index-cache.js";

/** The byte span a clip needs, from its object's index. */
export async function spanOf(
  ctx: Pick<ClipContext, "listing" | "indexes" | "options">,
  ref: ClipRef,
): Promise<{ prepared: PreparedIndex; span: DecodeSpan; frames: number[] }> {
  const object = (await objectOf(ctx.listing.objects, ref.object))!;
  const prepared = await ctx.indexes.get(ref.object, object);
  const { index, order } = prepared;
  if (index.kind !== "video" || !index.video || !order) {
    if (index.kind === "error") throw indexError(object.key, index.error);
    throw new KindUnsupportedError(object.key, index.kind);
  }
  const frames = clipFrames(ref.start, ctx.options);
  return { prepared, span: decodeSpan(index.video.samples, order, frames), frames };
}

/** Whether clips of `track` are cut from GOP runs when there are runs: not MPEG-TS (access units inside TS packets). */
export const inRuns = (track: VideoTrackV1, runs: boolean): boolean => runs && !track.mpegts;

/**
 * The bytes a clip's decode reads, what the plan asks the cache for: a GOP run's span (the clip's
 * samples and the reorder slack past them) where the clip is cut from one, else the clip's span.
 */
export async function plannedSpanOf(
  ctx: Pick<ClipContext, "listing" | "indexes" | "options">,
  ref: ClipRef,
  runs: boolean,
): Promise<{ offset: number; length: number }> {
  const { prepared, span } = await spanOf(ctx, ref);
  const track = prepared.index.video!;
  return inRuns(track, runs) ? runSpan(track.samples, span) : { offset: span.offset, length: span.length };
}
