import type { VideoTrackV1 } from "../../common/schema/index.js";
import { NativeError, NativeErrorCode, argumentError } from "./errors.js";

/** One sample in decode order; `offset` is relative to `Packets.data`. */
export interface Sample {
  readonly offset: number;
  readonly size: number;
  readonly pts: number;
  readonly dts: number;
  readonly keyframe: boolean;
}

/**
 * The packets of one clip: the range bytes as fetched plus where each sample sits in
 * them (the index's sample table, rebased). Samples are in decode order and the first is
 * a keyframe. No container parsing happens on this path.
 */
export interface Packets {
  readonly data: Uint8Array;
  readonly samples: readonly Sample[];
}

/** What the binding takes: one Float64Array of [offset, size, pts, dts] and the key flags. */
export interface PackedPackets {
  data: Uint8Array;
  table: Float64Array;
  keyframes: Uint8Array;
}

function checkInteger(value: number, min: number, i: number, key: string): void {
  if (!Number.isSafeInteger(value) || value < min)
    throw argumentError(`a ${min === 0 ? "non-negative " : ""}integer`, `samples[${i}].${key}`, value);
}

/**
 * Checks and packs packets for the addon: bounds, integer fields, strictly increasing
 * dts (reordered packets would decode into wrong pixels silently), keyframe first.
 */
export function packPackets(packets: unknown, keyframeFirst = true): PackedPackets {
  const p = packets as Packets;
  if (typeof p !== "object" || p === null || !(p.data instanceof Uint8Array) || !Array.isArray(p.samples)) {
    throw argumentError("{ data: Uint8Array, samples: Sample[] }", "packets", packets);
  }
  const n = p.samples.length;
  const table = new Float64Array(n * 4);
  const keyframes = new Uint8Array(n);
  let lastDts = -Infinity;
  for (let i = 0; i < n; i++) {
    const s = p.samples[i] as Sample;
    if (typeof s !== "object" || s === null) throw argumentError("a sample object", `samples[${i}]`, s);
    // Checked field by field, with no array per sample: a decode call packs dozens of them.
    checkInteger(s.offset, 0, i, "offset");
    checkInteger(s.size, 0, i, "size");
    checkInteger(s.pts, Number.MIN_SAFE_INTEGER, i, "pts");
    checkInteger(s.dts, Number.MIN_SAFE_INTEGER, i, "dts");
    if (s.offset + s.size > p.data.length) {
      throw new NativeError(
        NativeErrorCode.PacketOutOfRange,
        `Sample ${i} spans bytes ${s.offset}..${s.offset + s.size} but the data has ${p.data.length} bytes (truncated range?)`,
      );
    }
    if (s.dts <= lastDts) {
      throw new NativeError(
        NativeErrorCode.PacketOrder,
        `Sample ${i} has dts ${s.dts} after ${lastDts}: packets must be in decode order`,
      );
    }
    if (i === 0 && keyframeFirst && !s.keyframe)
      throw new NativeError(NativeErrorCode.NoKeyframe, "The first sample of a clip must be a keyframe");
    lastDts = s.dts;
    table[i * 4] = s.offset;
    table[i * 4 + 1] = s.size;
    table[i * 4 + 2] = s.pts;
    table[i * 4 + 3] = s.dts;
    keyframes[i] = s.keyframe ? 1 : 0;
  }
  return { data: p.data, table, keyframes };
}

/**
 * Slices samples `first .. first + count - 1` of an indexed track out of range bytes
 * that start at absolute offset `rangeStart` of the object.
 *
 * @example
 * const start = track.samples.offset[k]!;
 * const bytes = await reader.read(start, end - start);
 * const packets = packetsFromTrack(track, bytes, start, k, n);
 */
export function packetsFromTrack(
  track: VideoTrackV1,
  data: Uint8Array,
  rangeStart: number,
  first: number,
  count: number,
): Packets {
  const total = track.samples.size.length;
  if (!Number.isInteger(first) || first < 0 || first >= total)
    throw argumentError(`a sample index in 0..${total - 1}`, "first", first);
  if (!Number.isInteger(count) || count < 1 || first + count > total)
    throw argumentError(`a count in 1..${total - first}`, "count", count);
  const { offset, size, pts, dts, keyframe } = track.samples;
  const samples: Sample[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const j = first + i;
    samples[i] = {
      offset: offset[j]! - rangeStart,
      size: size[j]!,
      pts: pts[j]!,
      dts: dts[j]!,
      keyframe: keyframe[j] === 1,
    };
  }
  return { data, samples };
}

/** The byte span [start, end) that samples first..first+count-1 occupy in the object. */
export function sampleSpan(track: VideoTrackV1, first: number, count: number): { start: number; end: number } {
  let start = Infinity;
  let end = 0;
  for (let j = first; j < first + count; j++) {
    const o = track.samples.offset[j]!;
    start = Math.min(start, o);
    end = Math.max(end, o + track.samples.size[j]!);
  }
  return { start, end };
}
