/**
 * MPEG transport streams (.ts, .m2ts; H.264, HEVC). The format has no index, so the object is
 * read once, forward through a 4 MiB window: PAT → PMT → each H.264/HEVC stream's PID, then
 * each PES packet on one is one access unit with its PTS/DTS, a keyframe when it holds an IDR
 * (H.264) or IRAP (HEVC) picture. A sample's bytes are the run of TS packets that carry it,
 * interleaved with other streams: `tsAccessUnit` takes its payload back out.
 */
import type { VideoCodec, VideoTrackV1 } from "../schema/index.js";
import { Window } from "./ebml.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import type { HeadCachedReader } from "./range-reader.js";
import { overMemory, type IndexMemory } from "./index-memory.js";
import { spsDimensions } from "./sps.js";

const TS = 188;
const codecByStreamType = new Map<number, VideoCodec>([
  [0x1b, "h264"],
  [0x24, "hevc"],
]);
/** Video stream types ec does not decode, as ffprobe names their codecs. */
const otherVideo = new Map<number, string>([
  [0x01, "mpeg1video"],
  [0x02, "mpeg2video"],
  [0x10, "mpeg4"],
  [0x33, "vvc"],
  [0x42, "cavs"],
  [0xea, "vc1"],
]);
const corrupt = (message: string) => new MediaIndexError(IndexErrorCode.CORRUPT, message);

/** The TS packet size (188, or 192 for M2TS's 4-byte time prefix) when the first bytes are a transport stream. */
export function tsPacketSize(head: Uint8Array): 188 | 192 | undefined {
  for (const [size, first] of [
    [188, 0],
    [192, 4],
  ] as const) {
    const n = Math.min(4, Math.floor((head.length - first) / size));
    if (n >= 2 && Array.from({ length: n }, (_, p) => head[first + p * size]).every((b) => b === 0x47)) return size;
  }
  return undefined;
}

interface TsPacket {
  pid: number;
  start: boolean;
  payload: Uint8Array;
}

/** One TS packet at `p` (its 0x47 sync byte), or undefined when it carries nothing readable. */
function parsePacket(p: Uint8Array, at: number): TsPacket | undefined {
  if (p[0] !== 0x47) throw corrupt(`lost TS sync at byte ${at}`);
  const pid = ((p[1]! & 0x1f) << 8) | p[2]!;
  const control = (p[3]! >> 4) & 3;
  if (!(control & 1) || p[1]! & 0x80) return undefined; // no payload, or a transport error
  const from = control & 2 ? 5 + p[4]! : 4;
  if (from > TS) throw corrupt(`TS adaptation field at byte ${at} runs past its packet`);
  return { pid, start: (p[1]! & 0x40) !== 0, payload: p.subarray(from, TS) };
}

function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) out.set(p, o), (o += p.length);
  return out;
}

/** The payload (access unit) of the PES packet carried by the TS packets in `bytes`, for `pid`. */
export function tsAccessUnit(bytes: Uint8Array, pid: number, packetSize: 188 | 192): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = [];
  for (let at = 0; at + packetSize <= bytes.length; at += packetSize) {
    const pkt = parsePacket(bytes.subarray(at + packetSize - TS, at + packetSize), at);
    if (!pkt || pkt.pid !== pid) continue;
    if (parts.length === 0) {
      if (!pkt.start) throw corrupt("an access unit's first TS packet starts no PES packet");
      parts.push(pkt.payload.subarray(9 + pkt.payload[8]!));
    } else {
      parts.push(pkt.payload);
    }
  }
  return concat(parts);
}

const pts33 = (b: Uint8Array, at: number) =>
  ((b[at]! >> 1) & 7) * 2 ** 30 +
  (b[at + 1]! << 22) +
  ((b[at + 2]! >> 1) << 15) +
  (b[at + 3]! << 7) +
  (b[at + 4]! >> 1);

const WRAP = 2 ** 33;
const MINUTE = 60 * 90000;

/**
 * 33-bit timestamps wrap every 26.5 hours and a capture may cross the wrap. As libavformat
 * does: with the first timestamp as reference, a stream starting within a minute of the wrap
 * shows the timestamps before it as negative; any other shows the ones after it past 2^33.
 */
function wrapOf(first: number): (t: number) => number {
  const reference = first - MINUTE;
  return first >= WRAP - MINUTE ? (t) => (t >= reference ? t - WRAP : t) : (t) => (t < reference ? t + WRAP : t);
}

/** NAL unit types of an Annex B access unit, in order. */
function* nalTypes(au: Uint8Array, codec: VideoCodec): Generator<number> {
  for (let i = 0; i + 3 < au.length; i++) {
    if (au[i] === 0 && au[i + 1] === 0 && au[i + 2] === 1) {
      const h = au[i + 3]!;
      yield codec === "h264" ? h & 0x1f : (h >> 1) & 0x3f;
      i += 3;
    }
  }
}

const isKey = (codec: VideoCodec, types: number[]) =>
  types.some((t) => (codec === "h264" ? t === 5 : t >= 16 && t <= 23));
/** Parameter sets: H.264 SPS/PPS, HEVC VPS/SPS/PPS. */
const isParameterSet = (codec: VideoCodec, t: number) => (codec === "h264" ? t === 7 || t === 8 : t >= 32 && t <= 34);

/** The Annex B parameter sets of an access unit, as extradata (start codes kept). */
function parameterSets(au: Uint8Array, codec: VideoCodec): Uint8Array<ArrayBuffer> {
  const starts: number[] = [];
  for (let i = 0; i + 3 < au.length; i++)
    if (au[i] === 0 && au[i + 1] === 0 && au[i + 2] === 1) starts.push(i), (i += 2);
  const keep: Uint8Array[] = [];
  starts.forEach((s, k) => {
    const h = au[s + 3]!;
    const t = codec === "h264" ? h & 0x1f : (h >> 1) & 0x3f;
    let end = starts[k + 1] ?? au.length;
    while (end > s && au[end - 1] === 0) end--; // a 4-byte start code's leading zero
    if (isParameterSet(codec, t)) keep.push(Uint8Array.of(0, 0, 0, 1), au.subarray(s + 3, end));
  });
  return concat(keep);
}

/** Section payload of a PSI packet (PAT, PMT), past the pointer field. */
const section = (payload: Uint8Array) => payload.subarray(1 + payload[0]!);

/** One video PID's access units as the forward pass collects them. */
interface StreamTable {
  readonly pid: number;
  readonly codec: VideoCodec;
  readonly offset: number[];
  readonly size: number[];
  readonly keyframe: number[];
  readonly pts: number[];
  readonly dts: number[];
  /** The access unit being collected: its payload copied out (so no window stays held) and its byte count. */
  au: { start: number; end: number; parts: Uint8Array[]; bytes: number } | undefined;
  unwrap: ((t: number) => number) | undefined;
  extradata: Uint8Array<ArrayBuffer> | undefined;
}

/** Ends the access unit a stream is collecting: its size, keyframe flag, and the first keyframe's parameter sets. */
function finish(st: StreamTable): void {
  if (!st.au) return;
  const data = concat(st.au.parts);
  const types = [...nalTypes(data, st.codec)];
  st.keyframe.push(isKey(st.codec, types) ? 1 : 0);
  if (!st.extradata && st.keyframe.at(-1)) st.extradata = parameterSets(data, st.codec);
  st.size.push(st.au.end - st.au.start);
  st.au = undefined;
}

/** A TS packet of a stream's PID: a PES start begins an access unit, anything else continues it. */
function collect(
  st: StreamTable,
  pkt: NonNullable<ReturnType<typeof parsePacket>>,
  at: number,
  packetSize: number,
  memory: IndexMemory,
): void {
  if (pkt.start) {
    finish(st);
    const p = pkt.payload;
    if (p[0] !== 0 || p[1] !== 0 || p[2] !== 1) throw corrupt(`PES packet at byte ${at} has no start code`);
    const flags = p[7]!;
    if (!(flags & 0x80)) throw corrupt(`PES packet at byte ${at} has no PTS`);
    if (st.offset.length >= memory.maxWalkSamples)
      throw overMemory(`more than ${memory.maxWalkSamples} access units`, memory);
    const raw = pts33(p, 9);
    const rawDts = flags & 0x40 ? pts33(p, 14) : raw;
    st.unwrap ??= wrapOf(rawDts);
    st.offset.push(at);
    st.pts.push(st.unwrap(raw));
    st.dts.push(st.unwrap(rawDts));
    const first = p.slice(9 + p[8]!);
    st.au = { start: at, end: at + packetSize, parts: [first], bytes: first.length };
  } else if (st.au) {
    // An access unit runs to the next PES start of its PID: one that never comes must not hold the object.
    st.au.bytes += pkt.payload.length;
    if (st.au.bytes > memory.maxAccessUnit)
      throw overMemory(
        `the access unit at byte ${st.au.start} of PID ${st.pid} runs past ${memory.maxAccessUnit} bytes`,
        memory,
      );
    st.au.parts.push(pkt.payload.slice());
    st.au.end = at + packetSize;
  }
}

function trackOf(st: StreamTable, packetSize: 188 | 192): VideoTrackV1 {
  finish(st);
  const n = st.offset.length;
  if (n === 0) throw corrupt(`video PID ${st.pid} carries no PES packets`);
  const dims = st.extradata ? spsDimensions(st.extradata, st.codec) : undefined;
  if (!dims || dims.width <= 0 || dims.height <= 0)
    throw corrupt(`video PID ${st.pid} has no sequence parameter set before or in its first keyframe`);
  // Frame rate from the pts step: the smallest positive gap between presentation times.
  const sorted = [...st.pts].sort((a, b) => a - b);
  let step = Infinity;
  for (let i = 1; i < n; i++) if (sorted[i]! > sorted[i - 1]!) step = Math.min(step, sorted[i]! - sorted[i - 1]!);
  const span = n > 1 && Number.isFinite(step) ? sorted[n - 1]! - sorted[0]! + step : 0;
  return {
    trackId: st.pid,
    codec: st.codec,
    codecString: st.codec === "h264" ? "avc1" : "hvc1",
    extradata: st.extradata!,
    width: dims.width,
    height: dims.height,
    fps: Number.isFinite(step) ? 90000 / step : 0,
    timescale: 90000,
    duration: span / 90000,
    rotation: 0,
    frameCount: n,
    mpegts: { pid: st.pid, packetSize },
    samples: {
      offset: Float64Array.from(st.offset),
      size: Uint32Array.from(st.size),
      keyframe: Uint8Array.from(st.keyframe),
      pts: Float64Array.from(st.pts),
      dts: Float64Array.from(st.dts),
    },
  };
}

/**
 * Indexes every H.264 or HEVC stream of a transport stream's first program, in PMT order (the
 * first is the default track; `track` picks another), in one forward pass. A later stream that
 * carries no access units or no parameter sets is left out; the first one's failure is the object's.
 */
export async function indexMpegTs(reader: HeadCachedReader, packetSize: 188 | 192): Promise<VideoTrackV1[]> {
  const window = new Window(reader);
  let pmtPid: number | undefined;
  let streams: Map<number, StreamTable> | undefined;
  let unsupported: number | undefined;
  const count = Math.floor(reader.size / packetSize);
  for (let n = 0; n < count; n++) {
    const at = n * packetSize;
    const pkt = parsePacket(await window.at(at + packetSize - TS, TS), at);
    if (!pkt) continue;
    const st = streams?.get(pkt.pid);
    if (st) {
      collect(st, pkt, at, packetSize, reader.memory);
    } else if (pkt.pid === 0 && pkt.start && pmtPid === undefined) {
      const s = section(pkt.payload);
      const length = ((s[1]! & 0x0f) << 8) | s[2]!;
      for (let i = 8; i + 4 <= Math.min(3 + length - 4, s.length); i += 4) {
        const program = (s[i]! << 8) | s[i + 1]!;
        if (program !== 0) {
          pmtPid = ((s[i + 2]! & 0x1f) << 8) | s[i + 3]!;
          break;
        }
      }
    } else if (pkt.pid === pmtPid && pkt.start && !streams) {
      const s = section(pkt.payload);
      const length = ((s[1]! & 0x0f) << 8) | s[2]!;
      const end = Math.min(3 + length - 4, s.length);
      const found = new Map<number, StreamTable>();
      for (
        let i = 12 + (((s[10]! & 0x0f) << 8) | s[11]!);
        i + 5 <= end;
        i += 5 + (((s[i + 3]! & 0x0f) << 8) | s[i + 4]!)
      ) {
        const codec = codecByStreamType.get(s[i]!);
        const pid = ((s[i + 1]! & 0x1f) << 8) | s[i + 2]!;
        if (codec && !found.has(pid))
          found.set(pid, {
            pid,
            codec,
            offset: [],
            size: [],
            keyframe: [],
            pts: [],
            dts: [],
            au: undefined,
            unwrap: undefined,
            extradata: undefined,
          });
        // MPEG-1/2, MPEG-4 Part 2, VVC, AVS, VC-1: video ec does not decode.
        if (!codec && otherVideo.has(s[i]!)) unsupported ??= s[i];
      }
      if (found.size > 0) streams = found;
    }
  }
  if (!streams) {
    if (unsupported !== undefined)
      throw new MediaIndexError(
        IndexErrorCode.UNSUPPORTED_CODEC,
        `video stream type 0x${unsupported.toString(16)} (${otherVideo.get(unsupported)}) is not H.264 or HEVC`,
      );
    throw new MediaIndexError(IndexErrorCode.NO_VIDEO, "no H.264 or HEVC stream in the transport stream's PMT");
  }
  const [first, ...rest] = [...streams.values()];
  const tracks = [trackOf(first!, packetSize)];
  for (const st of rest) {
    try {
      tracks.push(trackOf(st, packetSize));
    } catch (err) {
      if (!(err instanceof MediaIndexError)) throw err;
    }
  }
  return tracks;
}
