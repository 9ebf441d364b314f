import type { ClipInfo } from "../clip-info.js";
import { asSdkError, ClipError, indexError, KindUnsupportedError, type SdkError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { clipFrames, type ClipRef } from "../sampler/clip-plan.js";
import { decodeSpan, type DecodeSpan } from "../sampler/frame-order.js";
import type { DatasetListing, DatasetObject, DatasetSource } from "../source/source.js";
import type { DecodeClip, DecodedClip, DecodeImage, Packet } from "./decode.js";
import { tsAccessUnit } from "../../common/media-index/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import type { IndexCache, PreparedIndex } from "./index-cache.js";
import type { Limiter } from "../../common/limiter.js";
import { arrayClip, arraySpan } from "./array-task.js";
import { recoveredSample, syncStart, type SyncStart } from "./recovery-point.js";
import { rotateClip } from "./rotate.js";
import { runSpan, type GopDecoder } from "./gop-decode.js";
import type { ClipSlot, SlotTicket } from "./clip-slots.js";
import { releaseRead } from "../../common/read-pool.js";

/** Errors about this host, not the clip: the decoder cannot load, or the asked-for device is not there. */
const FATAL_CODES = new Set(["ERR_NATIVE_UNAVAILABLE", "ERR_DEVICE_UNAVAILABLE"]);

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
  /** Bytes of samples a clip needed, counted once it was fetched. */
  readonly onNeeded: (bytes: number) => void;
  /** Frames the decoder produced, dropped ones included. */
  readonly onDecoded: (frames: number) => void;
}

/** The byte span a clip needs, from its object's index. */
export async function spanOf(
  ctx: Pick<ClipContext, "listing" | "indexes" | "options">,
  ref: ClipRef,
): Promise<{ prepared: PreparedIndex; span: DecodeSpan; frames: number[] }> {
  const object = ctx.listing.objects.at(ref.object)!;
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
const inRuns = (track: VideoTrackV1, runs: boolean): boolean => runs && !track.mpegts;

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

/**
 * Bytes of one decoded frame of a track at the output size: rgb24's are known before decoding;
 * a native pixel format's are learned from the first clip decoded of that codec and size (a
 * format of another size later just misses its slot: the decoder writes where it would).
 */
const nativeFrameBytes = new Map<string, number>();
const nativeKey = (track: VideoTrackV1, o: ResolvedOptions) =>
  `${track.codec}:${track.width}x${track.height}:${o.size?.join("x") ?? ""}`;
function frameBytesOf(track: VideoTrackV1, o: ResolvedOptions): number | undefined {
  if (o.format !== "rgb24") return nativeFrameBytes.get(nativeKey(track, o));
  const [h, w] = o.size ?? [track.height, track.width];
  return h * w * 3;
}

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
  const object = ctx.listing.objects.at(clip.ref.object)!;
  const skip = (error?: SdkError): ClipOutcome => ({
    kind: "skip",
    position: clip.position,
    key: object.key,
    start: clip.ref.start,
    ...(error ? { error } : {}),
  });
  try {
    const { index } = await ctx.indexes.get(clip.ref.object, object);
    if (index.kind === "array" && index.array) return await produceArray(ctx, clip, object.key, index.array);
    if (index.kind === "image" && index.image) return await produceImage(ctx, clip, index.image);
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
    const frameBytes = o.device.startsWith("cuda") ? undefined : frameBytesOf(track, o);
    const slot = frameBytes !== undefined ? ticket?.take(keep.length, frameBytes) : undefined;
    if (slot) took(slot);
    // GOP runs feed samples as the file holds them, from the GOP's sync sample on: MPEG-TS (access
    // units inside TS packets) and clips an H.264 recovery point cannot start decode on their own.
    const start = inRuns(track, ctx.gops !== undefined)
      ? await startOf(ctx, object, prepared, planned.span, frames)
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
          })
        : await decodeOnItsOwn(ctx, object, prepared, planned.span, frames, config, keep, slot),
      turn,
    );
    const first = decoded.frames[0];
    if (o.format === "native" && first && !decoded.gpuFrames)
      nativeFrameBytes.set(nativeKey(track, o), first.data.byteLength);
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
  } catch (err) {
    const e = asSdkError(err, "ERR_CLIP_FAILED", object.key);
    // No clip can succeed after these: stop the stream instead of skipping every clip.
    if (FATAL_CODES.has(e.code)) throw e;
    return skip(e);
  }
}

/** H.264 with length-prefixed NAL units: the length's size, else 0 (no recovery points to look for). */
function nalLengthSize(track: VideoTrackV1): number {
  return track.codec === "h264" && track.extradata[0] === 1 ? (track.extradata[4]! & 3) + 1 : 0;
}

async function fetchSpan(ctx: ClipContext, object: DatasetObject, s: DecodeSpan): Promise<Uint8Array> {
  const got = await ctx.source.read(object, s.offset, s.length);
  if (got.length !== s.length)
    throw new ClipError(
      "ERR_SHORT_READ",
      object.key,
      `Expected ${s.length} bytes at ${s.offset} but received ${got.length}`,
    );
  return got;
}

/** A sync sample as a decode start, and the first sample such a decode shows correctly once found. */
interface KnownStart {
  readonly start: SyncStart;
  recovered: number | undefined;
  /** Samples before this one were searched for `recovered`. */
  searchedTo: number;
}

/** Sync samples as decode starts, per index: a GOP's clips look each up once. */
const knownStarts = new WeakMap<PreparedIndex, Map<number, KnownStart>>();

/**
 * Whether decode from the span's sync sample shows the clip's frames (always, unless that sample
 * is an H.264 recovery point whose pictures come right only after the clip's first frame) and, if
 * so, whether it starts at a recovery point rather than an IDR; undefined: it does not. Reads
 * from `bytes` (the span's, fetched) or fetches what it needs.
 */
async function startOf(
  ctx: ClipContext,
  object: DatasetObject,
  prepared: PreparedIndex,
  span: DecodeSpan,
  frames: readonly number[],
  bytes?: Uint8Array,
): Promise<{ recovering: boolean } | undefined> {
  const track = prepared.index.video!;
  const { samples } = track;
  const lengthSize = nalLengthSize(track);
  const first = span.firstSample;
  if (!lengthSize || first === 0) return { recovering: false };
  let known = knownStarts.get(prepared);
  if (!known) knownStarts.set(prepared, (known = new Map()));
  let k = known.get(first);
  const sampleIn = (data: Uint8Array, d: number) =>
    data.subarray(samples.offset[d]! - span.offset, samples.offset[d]! - span.offset + samples.size[d]!);
  if (!k) {
    const au = bytes
      ? sampleIn(bytes, first)
      : await ctx.source.read(object, samples.offset[first]!, samples.size[first]!);
    const start = syncStart(au, lengthSize);
    if (!bytes) releaseRead(au);
    k = { start, recovered: (start.recoveryFrames ?? 0) === 0 ? first : undefined, searchedTo: first + 1 };
    known.set(first, k);
  }
  if (k.recovered === undefined && k.searchedTo < span.endSample) {
    const data = bytes ?? (await fetchSpan(ctx, object, span));
    k.recovered = recoveredSample(k.start, first, span.endSample, (d) => sampleIn(data, d), lengthSize);
    k.searchedTo = span.endSample;
    if (!bytes) releaseRead(data);
  }
  if (k.start.idr) return { recovering: false };
  const earliest = Math.min(...frames.map((f) => samples.pts[prepared.order!.decodeOf[f]!]!));
  return k.recovered !== undefined && samples.pts[k.recovered]! <= earliest ? { recovering: true } : undefined;
}

/** One clip on its own: its span fetched and decoded with `decode`, from a sync sample that shows its frames. */
async function decodeOnItsOwn(
  ctx: ClipContext,
  object: DatasetObject,
  prepared: PreparedIndex,
  planned: DecodeSpan,
  frames: number[],
  config: {
    track: VideoTrackV1;
    format: ResolvedOptions["format"];
    size: readonly [number, number] | undefined;
    device: string;
    threads: number;
  },
  keep: number[],
  slot: ClipSlot | undefined,
): Promise<DecodedClip> {
  const track = config.track;
  const { samples } = track;
  let span = planned;
  let bytes = await fetchSpan(ctx, object, span);
  try {
    // An H.264 recovery point (intra refresh) shows correct pictures only so many frames on:
    // while the clip's first frame comes sooner, decode from the sync sample before.
    let start: { recovering: boolean } | undefined;
    while (!(start = await startOf(ctx, object, prepared, span, frames, bytes))) {
      span = decodeSpan(samples, prepared.order!, frames, span.firstSample - 1);
      releaseRead(bytes);
      bytes = await fetchSpan(ctx, object, span);
    }
    const recovering = start.recovering;
    ctx.onNeeded(span.sampleBytes);
    const { data, packets } = spanPackets(track, bytes, span);
    const into = slot ? { into: slot.frames.map((t) => t.view) } : {};
    const decoded = await ctx.decodeSlots.run(() =>
      ctx.decode({ ...config, data, packets, keep, recovering, ...into }),
    );
    ctx.onDecoded(decoded.decoded ?? packets.length);
    return decoded;
  } finally {
    // The decoder copied every packet in: once its call settles nothing points into the span.
    releaseRead(bytes);
  }
}

/**
 * The decoder's input for a fetched span: its samples sliced out as they are, or for MPEG-TS
 * each access unit taken out of its TS packets into one buffer.
 */
export function spanPackets(
  track: VideoTrackV1,
  bytes: Uint8Array,
  span: DecodeSpan,
): { data: Uint8Array; packets: Packet[] } {
  const s = track.samples;
  const packets: Packet[] = [];
  const units: Uint8Array[] = [];
  let at = 0;
  for (let d = span.firstSample; d < span.endSample; d++) {
    const from = s.offset[d]! - span.offset;
    const unit = track.mpegts
      ? tsAccessUnit(bytes.subarray(from, from + s.size[d]!), track.mpegts.pid, track.mpegts.packetSize)
      : undefined;
    if (unit) units.push(unit);
    packets.push({
      offset: unit ? at : from,
      size: unit ? unit.length : s.size[d]!,
      pts: s.pts[d]!,
      dts: s.dts[d]!,
      keyframe: s.keyframe[d] === 1,
    });
    at += unit?.length ?? 0;
  }
  if (!track.mpegts) return { data: bytes, packets };
  const data = new Uint8Array(at);
  let o = 0;
  for (const u of units) data.set(u, o), (o += u.length);
  return { data, packets };
}

/** The labels and filter stage, shared by every kind. */
async function finish(
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

/** An .npy object: its data bytes, whole, as one sample. */
async function produceArray(
  ctx: ClipContext,
  clip: ScheduledClip,
  key: string,
  array: NonNullable<PreparedIndex["index"]["array"]>,
): Promise<ClipOutcome> {
  const span = arraySpan(key, array);
  const bytes =
    span.length === 0
      ? new Uint8Array(0)
      : await ctx.source.read(ctx.listing.objects.at(clip.ref.object)!, span.offset, span.length);
  if (bytes.length !== span.length)
    throw new ClipError(
      "ERR_SHORT_READ",
      key,
      `Expected ${span.length} bytes at ${span.offset} but received ${bytes.length}`,
    );
  ctx.onNeeded(span.length);
  const base: ClipInfo = { key, start: 0, frames: 1, stride: 1, pts: [], position: clip.position, labels: {} };
  return finish(ctx, clip, base, arrayClip(array, bytes));
}

/** An image object: all of its bytes, decoded into one frame (resized to `size` when given). */
async function produceImage(
  ctx: ClipContext,
  clip: ScheduledClip,
  image: NonNullable<PreparedIndex["index"]["image"]>,
): Promise<ClipOutcome> {
  const object = ctx.listing.objects.at(clip.ref.object)!;
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
