/**
 * One scheduled clip to its outcome, whatever its object's kind: the kind's producer
 * (video-task.ts, image-task.ts, array-task.ts) does the work; a failure becomes a skip, so one
 * corrupt object cannot stop the stream.
 */
import { objectOf } from "../source/source.js";
import { asSdkError, type SdkError } from "../errors.js";
import { produceArray } from "./array-task.js";
import type { ClipContext, ClipOutcome, ScheduledClip } from "./clip-context.js";
import type { ClipSlot, SlotTicket } from "./clip-slots.js";
import { produceImage } from "./image-task.js";
import { produceVideo } from "./video-task.js";

/** Errors about this host, not the clip: the decoder cannot load, or the asked-for device is not there. */
const FATAL_CODES = new Set(["ERR_NATIVE_UNAVAILABLE", "ERR_DEVICE_UNAVAILABLE"]);

/**
 * Fetch → packets → decode → labels → filter for one clip. A failure is an outcome, so one
 * corrupt object cannot stop the stream; only a host-level failure (no decoder, no device) throws.
 * `ticket`: the clip's place in a batch buffer, taken for a video clip whose frame size is known
 * (its frames are decoded into it) and waived otherwise.
 */
export async function produceClip(ctx: ClipContext, clip: ScheduledClip, ticket?: SlotTicket): Promise<ClipOutcome> {
  let slot: ClipSlot | undefined;
  try {
    const out = await produceInto(ctx, clip, ticket, (s) => (slot = s));
    return slot ? { ...out, slot } : out;
  } finally {
    ticket?.waive();
  }
}

async function produceInto(
  ctx: ClipContext,
  clip: ScheduledClip,
  ticket: SlotTicket | undefined,
  took: (slot: ClipSlot) => void,
): Promise<ClipOutcome> {
  const object = (await objectOf(ctx.listing.objects, clip.ref.object))!;
  const skip = (error?: SdkError): ClipOutcome => ({
    kind: "skip",
    position: clip.position,
    key: object.key,
    start: clip.ref.start,
    ...(error ? { error } : {}),
  });
  try {
    const { index } = await ctx.indexes.get(clip.ref.object, object);
    if (index.kind === "array" && index.array) return await produceArray(ctx, clip, index.array);
    if (index.kind === "image" && index.image) return await produceImage(ctx, clip, index.image);
    return await produceVideo(ctx, clip, object, ticket, took);
  } catch (err) {
    const e = asSdkError(err, "ERR_CLIP_FAILED", object.key);
    // No clip can succeed after these: stop the stream instead of skipping every clip.
    if (FATAL_CODES.has(e.code)) throw e;
    return skip(e);
  }
}
