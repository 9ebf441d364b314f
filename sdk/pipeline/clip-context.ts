/**
 * What every producer of a clip shares: the clip as scheduled, what it became, the context it
 * is produced in, and the labels-and-filter stage that ends every kind (video, image, array).
 */
import type { ClipInfo } from "../clip-info.js";
import { ClipError, type SdkError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import type { ClipRef } from "../sampler/clip-plan.js";
import type { DatasetListing, DatasetObject, DatasetSource } from "../source/source.js";
import type { DecodeClip, DecodedClip, DecodeImage } from "./decode.js";
import type { IndexCache } from "./index-cache.js";
import type { Limiter } from "../../common/limiter.js";
import type { GopDecoder } from "./gop-decode.js";
import type { ClipSlot } from "./clip-slots.js";
import type { FrameBytes } from "./frame-bytes.js";

/** A clip scheduled for this rank: its place in the epoch order and what it is. */
export interface ScheduledClip {
  readonly position: number;
  readonly ref: ClipRef;
}

/** What one clip became: frames, a filtered-out clip, or an error. `slot`: its place in a batch buffer, settled by the batcher. */
export type ClipOutcome =
  | {
      readonly kind: "clip";
      readonly position: number;
      readonly info: ClipInfo;
      readonly decoded: DecodedClip;
      readonly slot?: ClipSlot;
    }
  | {
      readonly kind: "skip";
      readonly position: number;
      readonly key: string;
      readonly start: number;
      readonly error?: SdkError;
      readonly slot?: ClipSlot;
    };

export interface ClipContext {
  readonly source: DatasetSource;
  readonly listing: DatasetListing;
  readonly indexes: IndexCache;
  readonly decode: DecodeClip;
  readonly decodeImage: DecodeImage;
  readonly decodeSlots: Limiter;
  /** GOP-coherent decode of video clips; absent: each clip decodes from its keyframe with `decode`. */
  readonly gops?: GopDecoder;
  readonly options: ResolvedOptions;
  /** What this stream learned of its frames' sizes, so clips take their batch slots before decoding. */
  readonly frameBytes: FrameBytes;
  /** Bytes of samples a clip needed, counted once it was fetched. */
  readonly onNeeded: (bytes: number) => void;
  /** Frames the decoder produced, dropped ones included. */
  readonly onDecoded: (frames: number) => void;
}

/** Exactly `length` bytes at `offset` of `object`; fewer is ERR_SHORT_READ. */
export async function readExactly(
  ctx: Pick<ClipContext, "source">,
  object: DatasetObject,
  offset: number,
  length: number,
): Promise<Uint8Array> {
  const got = await ctx.source.read(object, offset, length);
  if (got.length !== length)
    throw new ClipError(
      "ERR_SHORT_READ",
      object.key,
      `Expected ${length} bytes at ${offset} but received ${got.length}`,
    );
  return got;
}

/** The labels and filter stage, shared by every kind. */
export async function finish(
  ctx: ClipContext,
  clip: ScheduledClip,
  base: ClipInfo,
  decoded: DecodedClip,
): Promise<ClipOutcome> {
  const o = ctx.options;
  const info = o.labels ? { ...base, labels: Object.freeze(await o.labels(base, decoded)) } : base;
  if (o.filter && !(await o.filter(info))) {
    for (const g of decoded.holds ?? []) g.release();
    return { kind: "skip", position: clip.position, key: base.key, start: base.start };
  }
  return { kind: "clip", position: clip.position, info, decoded };
}
