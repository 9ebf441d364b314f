/**
 * A video clip: its span fetched, its packets decoded (from a GOP run shared with its
 * neighbours, or on its own from a sync sample that shows its frames), turned upright, checked
 * for its frame count, then labelled and filtered.
 */
import type { ClipInfo } from "../clip-info.js";
import { ClipError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { decodeSpan, type DecodeSpan } from "../sampler/frame-order.js";
import type { DatasetObject } from "../source/source.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import { releaseRead } from "../../common/read-pool.js";
import type { DecodedClip } from "./decode.js";
import type { PreparedIndex } from "./index-cache.js";
import type { ClipSlot, SlotTicket } from "./clip-slots.js";
import { finish, readExactly, type ClipContext, type ClipOutcome, type ScheduledClip } from "./clip-context.js";
import { inRuns, spanOf } from "./clip-span.js";
import { decodeStart, type StartReads } from "./recovery-point.js";
import { rotateClip } from "./rotate.js";
import { spanPackets } from "./span-packets.js";

/** What the decoder is told about a clip's frames, whichever way it is decoded. */
interface DecodeConfig {
  readonly track: VideoTrackV1;
  readonly format: ResolvedOptions["format"];
  readonly size: readonly [number, number] | undefined;
  readonly device: string;
  readonly threads: number;
}

/** How the recovery-point search reads `object`. */
const startReads = (ctx: ClipContext, object: DatasetObject): StartReads => ({
  read: (offset, length) => ctx.source.read(object, offset, length),
  readSpan: (s) => readExactly(ctx, object, s.offset, s.length),
});

/**
 * Fetch → packets → decode → labels → filter for one video clip; throws what went wrong.
 * `ticket`: the clip's place in a batch buffer, taken (and handed to `took`) where the clip's
 * frame size is known, so its frames are decoded into it.
 */
export async function produceVideo(
  ctx: ClipContext,
  clip: ScheduledClip,
  object: DatasetObject,
  ticket: SlotTicket | undefined,
  took: (slot: ClipSlot) => void,
): Promise<ClipOutcome> {
  const planned = await spanOf(ctx, clip.ref);
  const { prepared, frames } = planned;
  const track = prepared.index.video!;
  const { samples } = track;
  const o = ctx.options;
  const keep = frames.map((f) => samples.pts[prepared.order!.decodeOf[f]!]!);
  const rotation = track.rotation ?? 0;
  const turn = o.rotate === "auto" ? rotation : 0;
  // A quarter turn swaps the axes: decode to [width, height] so the upright frame is `size`.
  const size = o.size && (turn === 90 || turn === 270) ? ([o.size[1], o.size[0]] as const) : o.size;
  const config = { track, format: o.format, size, device: o.device, threads: 1 };
  // A CUDA decode hands back device frames: their host copies are stacked, so a slot would sit unused.
  const frameBytes = o.device.startsWith("cuda") ? undefined : ctx.frameBytes.of(track, o);
  const slot = frameBytes !== undefined ? ticket?.take(keep.length, frameBytes) : undefined;
  if (slot) took(slot);
  // GOP runs feed samples as the file holds them, from the GOP's sync sample on: MPEG-TS (access
  // units inside TS packets) and clips an H.264 recovery point cannot start decode on their own.
  const start = inRuns(track, ctx.gops !== undefined)
    ? await decodeStart(prepared, planned.span, frames, startReads(ctx, object))
    : undefined;
  const decoded = rotateClip(
    ctx.gops && start
      ? await ctx.gops.clip({
          object: clip.ref.object,
          key: object.key,
          config,
          order: prepared.order!,
          frames,
          span: planned.span,
          recovering: start.recovering,
          read: (offset, length) => ctx.source.read(object, offset, length),
          hop: o.hop ?? frames.at(-1)! - frames[0]! + 1,
          ...(slot ? { into: slot.frames } : {}),
          turn: clip.position,
        })
      : await decodeOnItsOwn(ctx, object, prepared, planned.span, frames, config, keep, slot, clip.position),
    turn,
  );
  const first = decoded.frames[0];
  if (first && !decoded.gpuFrames) ctx.frameBytes.learn(track, o, first.data.byteLength);
  if (decoded.frames.length !== keep.length) {
    throw new ClipError(
      "ERR_DECODE_SHORT",
      object.key,
      `Expected ${keep.length} frames from ${clip.ref.start} but the decoder returned ${decoded.frames.length}`,
    );
  }
  const base: ClipInfo = {
    key: object.key,
    start: clip.ref.start,
    frames: o.frames,
    stride: o.stride,
    pts: keep.map((p) => p / track.timescale),
    rotation,
    position: clip.position,
    etag: object.etag,
    source: { width: track.width, height: track.height, fps: track.fps, duration: track.duration },
    labels: {},
  };
  return await finish(ctx, clip, base, decoded);
}

/** One clip on its own: its span fetched and decoded with `decode`, from a sync sample that shows its frames. */
async function decodeOnItsOwn(
  ctx: ClipContext,
  object: DatasetObject,
  prepared: PreparedIndex,
  planned: DecodeSpan,
  frames: number[],
  config: DecodeConfig,
  keep: number[],
  slot: ClipSlot | undefined,
  turn: number,
): Promise<DecodedClip> {
  const track = config.track;
  const { samples } = track;
  const reads = startReads(ctx, object);
  let span = planned;
  let bytes = await reads.readSpan(span);
  try {
    // An H.264 recovery point (intra refresh) shows correct pictures only so many frames on:
    // while the clip's first frame comes sooner, decode from the sync sample before.
    let start: { recovering: boolean } | undefined;
    while (!(start = await decodeStart(prepared, span, frames, reads, bytes))) {
      span = decodeSpan(samples, prepared.order!, frames, span.firstSample - 1);
      releaseRead(bytes);
      bytes = await reads.readSpan(span);
    }
    const recovering = start.recovering;
    ctx.onNeeded(span.sampleBytes);
    const { data, packets } = spanPackets(track, bytes, span);
    // The slot's memory is taken once a decoder is free to write it, not while the clip waits for one.
    const decoded = await ctx.decodeSlots.run(
      () =>
        ctx.decode({
          ...config,
          data,
          packets,
          keep,
          recovering,
          ...(slot ? { into: slot.frames.map((t) => t.view) } : {}),
        }),
      turn,
    );
    ctx.onDecoded(decoded.decoded ?? packets.length);
    return decoded;
  } finally {
    // The decoder copied every packet in: once its call settles nothing points into the span.
    releaseRead(bytes);
  }
}
