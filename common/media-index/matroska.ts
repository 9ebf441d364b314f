/**
 * Matroska / WebM indexed from range reads: the EBML header, the Segment's Info and Tracks
 * (CodecPrivate as extradata), then every Cluster's block headers for exact per-frame byte
 * ranges. Matroska keeps no per-frame table (Cues name keyframe clusters only), so the walk
 * reads the clusters forward through a 4 MiB window: ~size / 4 MiB requests and about the
 * object's bytes, with or without Cues, never more than one window in memory.
 */
import type { VideoCodec, VideoTrackV1 } from "../schema/index.js";
import { children, elementAt, readFloat, readUint, vint, Window, type Element } from "./ebml.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import type { HeadCachedReader } from "./range-reader.js";
import { overMemory } from "./index-memory.js";

const ID = {
  EBML: 0x1a45dfa3,
  DocType: 0x4282,
  Segment: 0x18538067,
  Info: 0x1549a966,
  TimestampScale: 0x2ad7b1,
  Duration: 0x4489,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  TrackNumber: 0xd7,
  TrackType: 0x83,
  CodecID: 0x86,
  CodecPrivate: 0x63a2,
  DefaultDuration: 0x23e383,
  Video: 0xe0,
  PixelWidth: 0xb0,
  PixelHeight: 0xba,
  ContentEncodings: 0x6d80,
  Projection: 0x7670,
  ProjectionPoseYaw: 0x7673,
  ProjectionPosePitch: 0x7674,
  ProjectionPoseRoll: 0x7675,
  Cluster: 0x1f43b675,
  Timestamp: 0xe7,
  SimpleBlock: 0xa3,
  BlockGroup: 0xa0,
  Block: 0xa1,
  ReferenceBlock: 0xfb,
} as const;

/** Level-1 elements: in a Cluster of unknown size, one of these ends it. */
const TOP_LEVEL = new Set([
  0x114d9b74,
  ID.Info,
  ID.Tracks,
  0x1c53bb6b,
  ID.Cluster,
  0x1254c367,
  0x1043a770,
  0x1941a469,
  0x18538067,
  ID.EBML,
]);

const codecById = new Map<string, VideoCodec>([
  ["V_MPEG4/ISO/AVC", "h264"],
  ["V_MPEGH/ISO/HEVC", "hevc"],
  ["V_VP8", "vp8"],
  ["V_VP9", "vp9"],
  ["V_AV1", "av1"],
]);

/** Tracks, Info and the EBML header are a few KB; past this they are not metadata. */
const MAX_HEADER_ELEMENT = 16 << 20;

const corrupt = (message: string) => new MediaIndexError(IndexErrorCode.CORRUPT, message);
const ascii = (b: Uint8Array) => String.fromCharCode(...b).replace(/\0+$/, "");

/** True when the first bytes are an EBML header (Matroska or WebM). */
export function looksLikeMatroska(head: Uint8Array): boolean {
  return head.length >= 4 && head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3;
}

interface TrackInfo {
  number: number;
  codec: VideoCodec;
  codecId: string;
  extradata: Uint8Array<ArrayBuffer>;
  width: number;
  height: number;
  defaultDuration: number | undefined;
  rotation: VideoTrackV1["rotation"];
}

interface Table {
  offset: number[];
  size: number[];
  keyframe: number[];
  pts: number[];
}

async function elementData(window: Window, e: Element, what: string): Promise<Uint8Array> {
  if (e.size === undefined || e.size > MAX_HEADER_ELEMENT) throw corrupt(`${what} of ${e.size ?? "unknown"} bytes`);
  if (e.dataStart + e.size > window.reader.size)
    throw new MediaIndexError(IndexErrorCode.TRUNCATED, `${what} at byte ${e.start} runs past the end of the object`);
  return window.reader.read(e.dataStart, e.size);
}

const first = (m: Map<number, Uint8Array[]>, id: number) => m.get(id)?.[0];

function codecString(codec: VideoCodec, extradata: Uint8Array): string {
  if (codec === "h264" && extradata.length >= 4 && extradata[0] === 1) {
    return `avc1.${Array.from(extradata.subarray(1, 4), (b) => b.toString(16).padStart(2, "0")).join("")}`;
  }
  return { h264: "avc1", hevc: "hvc1", vp8: "vp8", vp9: "vp09", av1: "av01" }[codec];
}

function parseTracks(data: Uint8Array): TrackInfo[] {
  const tracks: TrackInfo[] = [];
  for (const entry of children(data, "Tracks").get(ID.TrackEntry) ?? []) {
    const e = children(entry, "TrackEntry");
    if (readUint(first(e, ID.TrackType) ?? new Uint8Array([0])) !== 1) continue;
    const codecId = ascii(first(e, ID.CodecID) ?? new Uint8Array(0));
    const codec = codecById.get(codecId);
    const number = readUint(first(e, ID.TrackNumber) ?? new Uint8Array(0));
    if (!codec) {
      tracks.push({
        number,
        codec: "h264",
        codecId,
        extradata: new Uint8Array(0),
        width: 0,
        height: 0,
        defaultDuration: undefined,
        rotation: 0,
      });
      continue;
    }
    if (e.has(ID.ContentEncodings))
      throw corrupt(`video track ${number} is compressed or encrypted (ContentEncodings), which ec does not undo`);
    const video = children(first(e, ID.Video) ?? new Uint8Array(0), "Video");
    const dd = first(e, ID.DefaultDuration);
    tracks.push({
      number,
      codec,
      codecId,
      // VP9's CodecPrivate lists features, not a vpcC (VP8 has none): the decoder reads all of it from the frames.
      extradata:
        codec === "vp9" || codec === "vp8"
          ? new Uint8Array(0)
          : (first(e, ID.CodecPrivate) ?? new Uint8Array(0)).slice(),
      width: readUint(first(video, ID.PixelWidth) ?? new Uint8Array(0)),
      height: readUint(first(video, ID.PixelHeight) ?? new Uint8Array(0)),
      defaultDuration: dd ? readUint(dd) : undefined,
      rotation: rotationOf(video),
    });
  }
  return tracks;
}

/**
 * Degrees clockwise the track's Projection pose turns the coded frame, as ffmpeg reads it into a
 * display matrix (ProjectionPoseRoll is counter-clockwise; ffmpeg's muxer writes the display
 * matrix there): 0 for no Projection, angles that are no quarter turn, and a yaw or pitch
 * (mirroring or a turn out of the plane), which ffmpeg's autorotate does not apply as a turn either.
 */
function rotationOf(video: Map<number, Uint8Array[]>): VideoTrackV1["rotation"] {
  const projection = first(video, ID.Projection);
  if (!projection) return 0;
  const pose = children(projection, "Projection");
  const angle = (id: number) => {
    const data = first(pose, id);
    return data ? readFloat(data) : 0;
  };
  if (angle(ID.ProjectionPoseYaw) !== 0 || angle(ID.ProjectionPosePitch) !== 0) return 0;
  const roll = angle(ID.ProjectionPoseRoll);
  if (!Number.isFinite(roll)) return 0;
  const degrees = ((Math.round(-roll) % 360) + 360) % 360;
  return degrees === 90 || degrees === 180 || degrees === 270 ? degrees : 0;
}

/** Block header after the element header: track number, int16 timestamp, flags (lacing in bits 1-2). */
async function blockHeader(window: Window, at: number, end: number) {
  const head = await window.at(at, 12);
  const track = vint(head, 0);
  if (!track || track.length + 3 > head.length) throw corrupt(`block header at byte ${at} is cut off`);
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const header = track.length + 3;
  if (at + header > end) throw corrupt(`block at byte ${at} is shorter than its header`);
  return {
    track: track.value,
    timestamp: view.getInt16(track.length),
    flags: head[track.length + 2]!,
    dataStart: at + header,
  };
}

/**
 * Walks the clusters from `pos`, adding each block of the wanted tracks to its table; returns
 * where the walk stopped. A block cut off by the end of the object (a recording that stopped
 * mid-write) ends the walk; everything before it is indexed.
 */
async function walkClusters(
  window: Window,
  tables: Map<number, Table>,
  cluster: Element,
  budget: { samples: number },
): Promise<number> {
  const size = window.reader.size;
  const end = cluster.size === undefined ? size : Math.min(cluster.dataStart + cluster.size, size);
  let clusterTime = 0;
  let pos = cluster.dataStart;
  const add = (track: number, dataStart: number, dataEnd: number, timestamp: number, key: boolean) => {
    const table = tables.get(track);
    if (!table) return;
    const { memory } = window.reader;
    if (++budget.samples > memory.maxWalkSamples)
      throw overMemory(`more than ${memory.maxWalkSamples} video blocks`, memory);
    table.offset.push(dataStart);
    table.size.push(dataEnd - dataStart);
    table.keyframe.push(key ? 1 : 0);
    table.pts.push(clusterTime + timestamp);
  };
  while (pos < end) {
    const e = await elementAt(window, pos);
    if (!e) break;
    if (cluster.size === undefined && TOP_LEVEL.has(e.id)) return pos;
    const dataEnd = e.size === undefined ? end : e.dataStart + e.size;
    if (dataEnd > size) return size; // cut off: keep what came before
    if (e.id === ID.Timestamp) {
      // Bounded before it is read: a declared size of gigabytes would otherwise be one read.
      if (e.size === undefined || e.size > 8)
        throw corrupt(`Cluster Timestamp at byte ${e.start} of ${e.size ?? "unknown"} bytes`);
      clusterTime = readUint(await window.at(e.dataStart, e.size));
    } else if (e.id === ID.SimpleBlock) {
      const b = await blockHeader(window, e.dataStart, dataEnd);
      if (b.flags & 0x06 && tables.has(b.track)) throw corrupt(`laced video block at byte ${e.start}`);
      add(b.track, b.dataStart, dataEnd, b.timestamp, (b.flags & 0x80) !== 0);
    } else if (e.id === ID.BlockGroup) {
      let block: { track: number; timestamp: number; flags: number; dataStart: number; dataEnd: number } | undefined;
      let referenced = false;
      for (let at = e.dataStart; at < dataEnd; ) {
        const child = await elementAt(window, at);
        if (!child || child.size === undefined) throw corrupt(`malformed BlockGroup at byte ${e.start}`);
        const childEnd = child.dataStart + child.size;
        if (child.id === ID.Block)
          block = { ...(await blockHeader(window, child.dataStart, childEnd)), dataEnd: childEnd };
        if (child.id === ID.ReferenceBlock) referenced = true;
        at = childEnd;
      }
      if (block) {
        if (block.flags & 0x06 && tables.has(block.track)) throw corrupt(`laced video block at byte ${e.start}`);
        add(block.track, block.dataStart, block.dataEnd, block.timestamp, !referenced);
      }
    }
    pos = dataEnd;
  }
  return end;
}

/** dts in decode order where Matroska stores none: the sorted pts, shifted so no sample decodes after it shows. */
function decodeTimes(pts: number[]): Float64Array<ArrayBuffer> {
  const sorted = [...pts].sort((a, b) => a - b);
  let shift = 0;
  pts.forEach((p, i) => (shift = Math.max(shift, sorted[i]! - p)));
  return Float64Array.from(sorted, (p) => p - shift);
}

/**
 * Indexes a Matroska or WebM object: every video track with a supported codec, in Tracks
 * order (audio and others ignored).
 */
export async function indexMatroska(reader: HeadCachedReader): Promise<VideoTrackV1[]> {
  const window = new Window(reader);
  const header = await elementAt(window, 0);
  if (!header || header.id !== ID.EBML) throw corrupt("no EBML header");
  const docType = ascii(
    first(children(await elementData(window, header, "EBML header"), "EBML header"), ID.DocType) ?? new Uint8Array(0),
  );
  if (docType !== "matroska" && docType !== "webm")
    throw corrupt(`EBML DocType ${JSON.stringify(docType)} is not matroska or webm`);
  const segment = await elementAt(window, header.dataStart + header.size!);
  if (!segment || segment.id !== ID.Segment) throw corrupt("no Segment after the EBML header");
  const segmentEnd = segment.size === undefined ? reader.size : Math.min(segment.dataStart + segment.size, reader.size);
  let timestampScale = 1_000_000;
  let durationTicks: number | undefined;
  let tracks: TrackInfo[] | undefined;
  const tables = new Map<number, Table>();
  const budget = { samples: 0 };
  for (let pos = segment.dataStart; pos < segmentEnd; ) {
    const e = await elementAt(window, pos);
    if (!e) break;
    if (e.id === ID.Info) {
      const info = children(await elementData(window, e, "Info"), "Info");
      const scale = first(info, ID.TimestampScale);
      if (scale) timestampScale = readUint(scale);
      const duration = first(info, ID.Duration);
      if (duration) durationTicks = readFloat(duration);
    } else if (e.id === ID.Tracks) {
      tracks = parseTracks(await elementData(window, e, "Tracks"));
      for (const t of tracks) if (t.width > 0) tables.set(t.number, { offset: [], size: [], keyframe: [], pts: [] });
    } else if (e.id === ID.Cluster) {
      if (!tracks) throw corrupt("a Cluster before the Tracks");
      pos = await walkClusters(window, tables, e, budget);
      continue;
    }
    if (e.size === undefined) break;
    pos = e.dataStart + e.size;
  }
  if (!tracks) throw corrupt("no Tracks element");
  if (!(timestampScale > 0) || 1e9 % timestampScale !== 0)
    throw corrupt(`TimestampScale ${timestampScale} ns does not divide a second`);
  const timescale = 1e9 / timestampScale;
  // Every track here is of TrackType video, whatever its codec: one ec does not decode is named, not missed.
  const video = tracks;
  if (video.length === 0) throw new MediaIndexError(IndexErrorCode.NO_VIDEO, "no video track");
  const supported = video.filter((t) => codecById.has(t.codecId));
  if (supported.length === 0) {
    throw new MediaIndexError(
      IndexErrorCode.UNSUPPORTED_CODEC,
      `video codec ${JSON.stringify(video[0]!.codecId)} is not one of h264, hevc, av1, vp8, vp9`,
    );
  }
  return supported.map((t) => {
    const table = tables.get(t.number);
    const n = table?.pts.length ?? 0;
    if (!table || n === 0) throw corrupt(`video track ${t.number} has no blocks`);
    if (t.width <= 0 || t.height <= 0)
      throw corrupt(`video track ${t.number} has no dimensions (${t.width}x${t.height})`);
    const pts = Float64Array.from(table.pts);
    const frameTicks = t.defaultDuration !== undefined ? t.defaultDuration / timestampScale : undefined;
    // A loop, not Math.max(...pts): spreading 10^5 arguments overflows the stack.
    let [low, high] = [Infinity, -Infinity];
    for (const p of table.pts) [low, high] = [Math.min(low, p), Math.max(high, p)];
    const span = high - low + (frameTicks ?? 0);
    const fps = frameTicks ? timescale / frameTicks : span > 0 ? (n * timescale) / span : 0;
    return {
      trackId: t.number,
      codec: t.codec,
      codecString: codecString(t.codec, t.extradata),
      extradata: t.extradata,
      width: t.width,
      height: t.height,
      fps,
      timescale,
      duration: (durationTicks ?? span) / timescale,
      rotation: t.rotation,
      frameCount: n,
      samples: {
        offset: Float64Array.from(table.offset),
        size: Uint32Array.from(table.size),
        keyframe: Uint8Array.from(table.keyframe),
        pts,
        dts: decodeTimes(table.pts),
      },
    };
  });
}
