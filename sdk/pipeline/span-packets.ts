import { tsAccessUnit } from "../../common/media-index/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import type { DecodeSpan } from "../sampler/frame-order.js";
import type { Packet } from "./decode.js";

/**
 * The decoder's input for a fetched span: its samples sliced out as they are, or for MPEG-TS
 * each access unit taken out of its TS packets into one buffer.
 *
 * @example
 * const { data, packets } = spanPackets(track, await read(span.offset, span.length), span);
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
