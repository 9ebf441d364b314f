/**
 * Where an H.264 decode may start for a given frame: an IDR shows every picture after it; a
 * recovery point (intra refresh, or an open GOP's I-frame: the stream's only random-access
 * points after the first frame, marked sync by muxers) shows pictures only from the reference
 * picture `recovery_frame_cnt` frame numbers on; libavcodec outputs none before it, and none of
 * the B-frames after the recovery point in decode order but shown before it (they reference
 * frames before it: a decode that starts there must tolerate their errors).
 */
import { releaseRead } from "../../common/read-pool.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import type { DecodeSpan } from "../sampler/frame-order.js";
import type { PreparedIndex } from "./index-cache.js";

/** What a sync sample is as a place to start decoding. */
export interface SyncStart {
  /** An IDR: nothing after it references anything before it. */
  readonly idr: boolean;
  /** The recovery point SEI's frame count: 0 for an IDR; undefined for a sync sample with neither. */
  readonly recoveryFrames: number | undefined;
}

/** Calls `onNal` with each NAL unit of a length-prefixed access unit until it returns true. */
function eachNal(au: Uint8Array, lengthSize: number, onNal: (nal: Uint8Array) => boolean): void {
  for (let at = 0; at + lengthSize < au.length; ) {
    let n = 0;
    for (let i = 0; i < lengthSize; i++) n = n * 256 + au[at + i]!;
    if (onNal(au.subarray(at + lengthSize, Math.min(au.length, at + lengthSize + n)))) return;
    at += lengthSize + n;
  }
}

const isSlice = (type: number) => type === 1 || type === 5;

/** What a length-prefixed H.264 access unit is as a decode start. */
export function syncStart(au: Uint8Array, lengthSize: number): SyncStart {
  let idr = false;
  let recovery: number | undefined;
  eachNal(au, lengthSize, (nal) => {
    const type = nal[0]! & 0x1f;
    if (type === 6) recovery ??= seiRecoveryFrames(rbspOf(nal.subarray(1)));
    idr = type === 5;
    // The first slice ends the search: parameter sets and SEI come before it.
    return isSlice(type);
  });
  return idr ? { idr, recoveryFrames: 0 } : { idr, recoveryFrames: recovery };
}

/** Whether an access unit's picture is a reference picture (its first slice's nal_ref_idc). */
export function isReference(au: Uint8Array, lengthSize: number): boolean {
  let ref = false;
  eachNal(au, lengthSize, (nal) => {
    ref = isSlice(nal[0]! & 0x1f) && (nal[0]! & 0x60) !== 0;
    return isSlice(nal[0]! & 0x1f);
  });
  return ref;
}

/**
 * The first sample (decode order) that a decode from sync sample `first` shows correctly: the
 * `recoveryFrames`-th reference picture after it (each reference picture advances frame_num by
 * one), or `first` itself; every frame shown from that sample's on comes out right. Undefined
 * when it lies beyond the samples `first .. end - 1` that `sampleAt` returns.
 */
export function recoveredSample(
  start: SyncStart,
  first: number,
  end: number,
  sampleAt: (d: number) => Uint8Array,
  lengthSize: number,
): number | undefined {
  let left = start.recoveryFrames ?? 0;
  if (left === 0) return first;
  for (let d = first + 1; d < end; d++) if (isReference(sampleAt(d), lengthSize) && --left === 0) return d;
  return undefined;
}

/** NAL payload without its emulation prevention bytes (00 00 03 → 00 00). */
function rbspOf(b: Uint8Array): Uint8Array {
  const out: number[] = [];
  for (let i = 0, zeros = 0; i < b.length; i++) {
    if (zeros >= 2 && b[i] === 3) {
      zeros = 0;
      continue;
    }
    zeros = b[i] === 0 ? zeros + 1 : 0;
    out.push(b[i]!);
  }
  return Uint8Array.from(out);
}

function seiRecoveryFrames(sei: Uint8Array): number | undefined {
  for (let at = 0; at < sei.length && sei[at] !== 0x80; ) {
    let type = 0,
      size = 0;
    while (sei[at] === 0xff) (type += 255), at++;
    type += sei[at++] ?? 0;
    while (sei[at] === 0xff) (size += 255), at++;
    size += sei[at++] ?? 0;
    if (type === 6) return ueAt(sei.subarray(at, at + size));
    at += size;
  }
  return undefined;
}

/** The first Exp-Golomb ue(v) of a bit string. */
function ueAt(b: Uint8Array): number | undefined {
  const bit = (i: number) => ((b[i >> 3] ?? 0) >> (7 - (i & 7))) & 1;
  let zeros = 0;
  while (zeros < 32 && bit(zeros) === 0) zeros++;
  if (zeros === 32) return undefined;
  let v = 0;
  for (let i = 0; i < zeros; i++) v = v * 2 + bit(zeros + 1 + i);
  return 2 ** zeros - 1 + v;
}

/** H.264 with length-prefixed NAL units: the length's size, else 0 (no recovery points to look for). */
function nalLengthSize(track: VideoTrackV1): number {
  return track.codec === "h264" && track.extradata[0] === 1 ? (track.extradata[4]! & 3) + 1 : 0;
}

/** How the search reads an object's bytes. */
export interface StartReads {
  /** Bytes at `offset`, as the source returns them. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** A span's bytes, exactly. */
  readSpan(span: DecodeSpan): Promise<Uint8Array>;
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
 * from `bytes` (the span's, fetched) or fetches what it needs with `reads`.
 *
 * @example
 * const start = await decodeStart(prepared, span, frames, reads);
 * if (start) decode({ ...config, recovering: start.recovering });
 */
export async function decodeStart(
  prepared: PreparedIndex,
  span: DecodeSpan,
  frames: readonly number[],
  reads: StartReads,
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
    const au = bytes ? sampleIn(bytes, first) : await reads.read(samples.offset[first]!, samples.size[first]!);
    const start = syncStart(au, lengthSize);
    if (!bytes) releaseRead(au);
    k = { start, recovered: (start.recoveryFrames ?? 0) === 0 ? first : undefined, searchedTo: first + 1 };
    known.set(first, k);
  }
  if (k.recovered === undefined && k.searchedTo < span.endSample) {
    const data = bytes ?? (await reads.readSpan(span));
    k.recovered = recoveredSample(k.start, first, span.endSample, (d) => sampleIn(data, d), lengthSize);
    k.searchedTo = span.endSample;
    if (!bytes) releaseRead(data);
  }
  if (k.start.idr) return { recovering: false };
  const earliest = Math.min(...frames.map((f) => samples.pts[prepared.order!.decodeOf[f]!]!));
  return k.recovered !== undefined && samples.pts[k.recovered]! <= earliest ? { recovering: true } : undefined;
}
