/** Image objects: one object is one sample, all of its bytes decoded into one frame. */
import { objectOf } from "../source/source.js";
import type { ClipInfo } from "../clip-info.js";
import { ClipError } from "../errors.js";
import type { PreparedIndex } from "./index-cache.js";
import { finish, type ClipContext, type ClipOutcome, type ScheduledClip } from "./clip-context.js";

/** An image object: all of its bytes, decoded into one frame (resized to `size` when given). */
export async function produceImage(
  ctx: ClipContext,
  clip: ScheduledClip,
  image: NonNullable<PreparedIndex["index"]["image"]>,
): Promise<ClipOutcome> {
  const object = (await objectOf(ctx.listing.objects, clip.ref.object))!;
  const bytes = await ctx.source.read(object, 0, object.size);
  if (bytes.length !== object.size)
    throw new ClipError("ERR_SHORT_READ", object.key, `Expected ${object.size} bytes but received ${bytes.length}`);
  ctx.onNeeded(object.size);
  const o = ctx.options;
  const decoded = await ctx.decodeSlots.run(() =>
    ctx.decodeImage({ data: bytes, format: image.format, output: o.format, size: o.size }),
  );
  ctx.onDecoded(decoded.decoded ?? 1);
  const base: ClipInfo = {
    key: object.key,
    start: 0,
    frames: 1,
    stride: 1,
    pts: [],
    position: clip.position,
    etag: object.etag,
    source: { width: image.width, height: image.height, fps: 0, duration: 0 },
    labels: {},
  };
  return finish(ctx, clip, base, decoded);
}
