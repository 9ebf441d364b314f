import { createFile, Log, MP4BoxBuffer, type ISOFile, type Movie, type Track, type VisualSampleEntry } from "mp4box";
import type { VideoCodec, VideoTrackV1 } from "../schema/index.js";
import { isShown } from "./edit-window.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import type { HeadCachedReader } from "./range-reader.js";
import { mapLimit } from "../limiter.js";
import { withSampleBounds } from "./sample-bounds.js";
import { overMemory } from "./index-memory.js";

/** Top-level box types that may open an ISO BMFF file; used to sniff the format. */
const OPENING_BOXES = new Set(["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot", "styp", "sidx", "moof"]);

const codecBySampleEntry = new Map<string, VideoCodec>([
  ["avc1", "h264"],
  ["avc3", "h264"],
  ["hvc1", "hevc"],
  ["hev1", "hevc"],
  ["av01", "av1"],
  ["vp08", "vp8"],
  ["vp09", "vp9"],
]);
const configBoxByCodec: Record<VideoCodec, "avcC" | "hvcC" | "av1C" | "vpcC"> = {
  h264: "avcC",
  hevc: "hvcC",
  av1: "av1C",
  vp8: "vpcC",
  vp9: "vpcC",
};

/** ffprobe's names of video sample entries ec does not decode; mp4v is named by its object type below. */
const otherCodecByEntry = new Map<string, string>([
  ["jpeg", "mjpeg"],
  ["mjpa", "mjpeg"],
  ["mjpb", "mjpeg"],
  ["s263", "h263"],
  ["h263", "h263"],
  ["vvc1", "vvc"],
  ["vvi1", "vvc"],
  ["apch", "prores"],
  ["apcn", "prores"],
  ["apcs", "prores"],
  ["apco", "prores"],
  ["ap4h", "prores"],
  ["ap4x", "prores"],
]);

/** ffprobe's name of an mp4v entry's MPEG-4 object type indication (ISO/IEC 14496-1 table 5, as libavformat maps it). */
function mp4vCodec(oti: number): string | undefined {
  if (oti === 0x20) return "mpeg4";
  if (oti >= 0x60 && oti <= 0x65) return "mpeg2video";
  if (oti === 0x6a) return "mpeg1video";
  if (oti === 0x6c) return "mjpeg";
  return undefined;
}

/** The codec of a sample entry ec does not decode, as ffprobe names it, with the entry (and object type) it came from. */
function unsupportedName(entry: VisualSampleEntry | undefined): string {
  if (!entry) return "unknown";
  if (entry.type === "mp4v") {
    const oti = (entry as { esds?: { esd?: { getOTI?: () => number } } }).esds?.esd?.getOTI?.() ?? 0;
    const name = mp4vCodec(oti);
    return name ? `${name} (sample entry mp4v, object type 0x${oti.toString(16)})` : "mp4v";
  }
  const name = otherCodecByEntry.get(entry.type);
  return name ? `${name} (sample entry ${entry.type})` : entry.type;
}

// mp4box logs parse problems to the console; the indexer reports them as error records instead.
Log.setLogLevel(() => {});

function fourcc(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
}

/** True when the first bytes look like an ISO BMFF box header. */
export function looksLikeMp4(head: Uint8Array): boolean {
  return head.length >= 8 && OPENING_BOXES.has(fourcc(head, 4));
}

interface TopBox {
  type: string;
  start: number;
  size: number;
}

/**
 * Walks the top-level boxes by their headers only (one small read per box beyond the
 * cached head), so the mdat is stepped over, never read.
 */
async function topLevelBoxes(reader: HeadCachedReader): Promise<TopBox[]> {
  const boxes: TopBox[] = [];
  let pos = 0;
  while (pos < reader.size) {
    if (reader.size - pos < 8)
      throw new MediaIndexError(
        IndexErrorCode.TRUNCATED,
        `${reader.size - pos} stray bytes after the last box at ${pos}`,
      );
    const header = await reader.read(pos, Math.min(16, reader.size - pos));
    const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
    const type = fourcc(header, 4);
    let size = view.getUint32(0);
    if (size === 1) {
      if (header.length < 16)
        throw new MediaIndexError(IndexErrorCode.TRUNCATED, `64-bit box header of ${type} at ${pos} is cut off`);
      size = Number(view.getBigUint64(8));
    } else if (size === 0) {
      size = reader.size - pos;
    }
    if (size < 8 || !/^[\x20-\x7e]{4}$/.test(type)) {
      throw new MediaIndexError(
        IndexErrorCode.CORRUPT,
        `invalid box header at byte ${pos} (type ${JSON.stringify(type)}, size ${size})`,
      );
    }
    if (pos + size > reader.size) {
      throw new MediaIndexError(
        IndexErrorCode.TRUNCATED,
        `box ${type} at ${pos} declares ${size} bytes but only ${reader.size - pos} remain`,
      );
    }
    if (boxes.length >= reader.memory.maxBoxes)
      throw overMemory(`more than ${reader.memory.maxBoxes} top-level boxes`, reader.memory);
    boxes.push({ type, start: pos, size });
    pos += size;
  }
  return boxes;
}

function parseMovie(bytes: Uint8Array): { file: ISOFile; info: Movie } {
  const file = createFile();
  let info: Movie | undefined;
  let failure: string | undefined;
  file.onReady = (movie) => {
    info = movie;
  };
  file.onError = (module, message) => {
    failure = `${module}: ${message}`;
  };
  const copy = bytes.slice().buffer;
  try {
    file.appendBuffer(MP4BoxBuffer.fromArrayBuffer(copy, 0), true);
    file.flush();
  } catch (cause) {
    if (cause instanceof MediaIndexError) throw cause;
    throw new MediaIndexError(IndexErrorCode.CORRUPT, `moov does not parse: ${(cause as Error).message}`, { cause });
  }
  if (!info) throw new MediaIndexError(IndexErrorCode.CORRUPT, `moov does not parse${failure ? `: ${failure}` : ""}`);
  return { file, info };
}

/** What an edit list does to a track: the shift onto ffprobe's pts clock and the window ffmpeg shows. */
interface EditList {
  shift: number;
  window?: { start: number; end?: number };
}

function unsupportedEdits(track: Track, why: string): MediaIndexError {
  const list = (track.edits ?? [])
    .map((e) => `${e.media_time}+${e.segment_duration}@${e.media_rate_integer}`)
    .join(", ");
  return new MediaIndexError(
    IndexErrorCode.UNSUPPORTED_EDIT_LIST,
    `video track ${track.id} has an edit list ec does not follow (${why}): [${list}]`,
  );
}

/**
 * The edit list as ffmpeg's mov demuxer applies it: leading empty edits delay the track, the
 * first media edit's media_time is where presentation starts (pts = cts - media_time + delay),
 * and its duration ends it; samples outside are decoded as references but not shown. Further
 * media edits are followed only where they continue the first one seamlessly.
 */
function editList(track: Track): EditList {
  const edits = track.edits ?? [];
  if (edits.length === 0) return { shift: 0 };
  if (!(track.movie_timescale > 0)) throw unsupportedEdits(track, "the movie timescale is 0");
  const toMedia = (d: number) => Math.round((d * track.timescale) / track.movie_timescale);
  let i = 0;
  let delay = 0;
  for (; i < edits.length && edits[i]!.media_time === -1; i++) delay += toMedia(edits[i]!.segment_duration);
  const first = edits[i];
  if (!first) throw unsupportedEdits(track, "only empty edits");
  let duration = 0;
  let next = first.media_time;
  for (; i < edits.length && edits[i]!.media_time === next; i++) {
    const e = edits[i]!;
    if (e.media_rate_integer !== 1 || e.media_rate_fraction !== 0)
      throw unsupportedEdits(track, `a rate of ${e.media_rate_integer}.${e.media_rate_fraction}`);
    if (e.segment_duration === 0) {
      // A duration of 0 (fragmented files) runs to the end of the media.
      if (i + 1 < edits.length) throw unsupportedEdits(track, "an open-ended edit followed by more edits");
      return { shift: first.media_time - delay, window: { start: delay } };
    }
    const d = toMedia(e.segment_duration);
    duration += d;
    next += d;
  }
  // Trailing empty edits only pause after the last frame.
  if (edits.slice(i).some((e) => e.media_time !== -1))
    throw unsupportedEdits(track, "media edits that do not continue one another");
  return { shift: first.media_time - delay, window: { start: delay, end: delay + duration } };
}

/** Reads boxes with a few requests in flight; their positions are already known from the walk. */
async function readBoxes(reader: HeadCachedReader, boxes: TopBox[]): Promise<Uint8Array[]> {
  return mapLimit(boxes, 8, (box) => reader.read(box.start, box.size));
}

/** Where each glued moof came from, so moof-relative sample offsets can be put back in file terms. */
interface Glued {
  bytes: Uint8Array;
  moofShift: number[];
}

/**
 * Indexes an MP4/MOV from range reads: the head, the box headers, the moov (at the start or
 * the end) and, for fragmented files, every moof. Returns every video track with a supported
 * codec, in file order (audio and other tracks are ignored).
 */
export async function indexMp4(reader: HeadCachedReader): Promise<VideoTrackV1[]> {
  const boxes = await topLevelBoxes(reader);
  const moov = boxes.find((b) => b.type === "moov");
  const moofs = boxes.filter((b) => b.type === "moof");
  if (!moov) {
    if (moofs.length > 0)
      throw new MediaIndexError(
        IndexErrorCode.FRAGMENTED,
        "fragments (moof) without a moov box: a media segment without its init segment",
      );
    throw new MediaIndexError(IndexErrorCode.NO_MOOV, "no moov box: the file is incomplete or not a finished MP4");
  }
  const ftyp = boxes.find((b) => b.type === "ftyp" && b.size <= 4096);
  const parts = [...(ftyp ? [ftyp] : []), moov, ...moofs];
  const headerBytes = parts.reduce((a, b) => a + b.size, 0);
  // Parsed into JS arrays several times their size: refused rather than held in a Worker's 128 MB.
  const { memory } = reader;
  if (headerBytes > memory.maxMp4Header)
    throw overMemory(`moov and moofs are ${headerBytes} bytes; at most ${memory.maxMp4Header} are indexed`, memory);
  // Sample offsets in stco/co64 are absolute, so mp4box can parse the header boxes glued
  // together without the mdat; fragment offsets are moof-relative and get shifted back below.
  const bytes = await readBoxes(reader, parts);
  const glued: Glued = { bytes: new Uint8Array(headerBytes), moofShift: [] };
  let at = 0;
  parts.forEach((box, i) => {
    glued.bytes.set(bytes[i]!, at);
    if (box.type === "moof") glued.moofShift.push(box.start - at);
    at += box.size;
  });
  const limit = { maxSamples: memory.maxMp4Samples, over: (message: string) => overMemory(message, memory) };
  const { file, info } = withSampleBounds(reader.size, limit, () => parseMovie(glued.bytes));
  if (info.videoTracks.length === 0)
    throw new MediaIndexError(
      IndexErrorCode.NO_VIDEO,
      `no video track (tracks: ${info.tracks.map((t) => t.type ?? "unknown").join(", ") || "none"})`,
    );

  let unsupported = "";
  const tracks: VideoTrackV1[] = [];
  for (const track of info.videoTracks) {
    const entry = file.getTrackById(track.id)?.mdia?.minf?.stbl?.stsd?.entries?.[0] as VisualSampleEntry | undefined;
    const codec = entry ? codecBySampleEntry.get(entry.type) : undefined;
    if (!entry || !codec) {
      unsupported ||= unsupportedName(entry);
      continue;
    }
    tracks.push(trackTable(file, track, entry, codec, glued, reader.size));
  }
  if (tracks.length === 0)
    throw new MediaIndexError(
      IndexErrorCode.UNSUPPORTED_CODEC,
      `video codec ${unsupported} is not one of h264, hevc, av1, vp8, vp9`,
    );
  return tracks;
}

/**
 * Degrees clockwise the display matrix turns the coded frame, as ffmpeg's autorotate reads
 * it (atan2 of the matrix's first row); 0 for angles that are no quarter turn and for
 * mirroring matrices, which ffmpeg does not apply either.
 */
function rotationOf(matrix: ArrayLike<number> | undefined): VideoTrackV1["rotation"] {
  if (!matrix || matrix.length < 5) return 0;
  const [a, b, , c, d] = Array.from(matrix, (v) => v | 0);
  if (a! * d! - b! * c! <= 0) return 0;
  const degrees = ((Math.round((Math.atan2(b!, a!) * 180) / Math.PI) % 360) + 360) % 360;
  return degrees === 90 || degrees === 180 || degrees === 270 ? degrees : 0;
}

/** tfhd flag: the traf states an absolute base_data_offset, so its samples need no shift. */
const TFHD_BASE_DATA_OFFSET = 0x1;

function fragmentShift(file: ISOFile, glued: Glued, trackId: number, moofNumber: number | undefined): number {
  if (moofNumber === undefined) return 0;
  const traf = file.moofs[moofNumber - 1]?.trafs?.find((t) => t.tfhd?.track_id === trackId);
  if (traf && traf.tfhd.flags & TFHD_BASE_DATA_OFFSET) return 0;
  return glued.moofShift[moofNumber - 1] ?? 0;
}

function trackTable(
  file: ISOFile,
  track: Track,
  entry: VisualSampleEntry,
  codec: VideoCodec,
  glued: Glued,
  objectSize: number,
): VideoTrackV1 {
  const config = entry[configBoxByCodec[codec]];
  if (!config || config.start === undefined) {
    throw new MediaIndexError(
      IndexErrorCode.CORRUPT,
      `${entry.type} sample entry has no ${configBoxByCodec[codec]} box`,
    );
  }
  // libavcodec takes the record after the 8-byte box header as extradata (avcC, hvcC, av1C).
  const extradata = glued.bytes.slice(config.start + 8, config.start + config.size);
  const samples = file.getTrackSamplesInfo(track.id);
  const n = samples.length;
  if (n === 0) throw new MediaIndexError(IndexErrorCode.CORRUPT, `video track ${track.id} has no samples`);
  const table = {
    offset: new Float64Array(n),
    size: new Uint32Array(n),
    keyframe: new Uint8Array(n),
    pts: new Float64Array(n),
    dts: new Float64Array(n),
  };
  const { shift, window } = editList(track);
  let shown = 0;
  for (let i = 0; i < n; i++) {
    const s = samples[i]!;
    const offset = s.offset + fragmentShift(file, glued, track.id, s.moof_number);
    if (offset + s.size > objectSize) {
      throw new MediaIndexError(
        IndexErrorCode.TRUNCATED,
        `sample ${i} spans bytes ${offset}..${offset + s.size} but the object has ${objectSize}`,
      );
    }
    table.offset[i] = offset;
    table.size[i] = s.size;
    table.keyframe[i] = s.is_sync ? 1 : 0;
    table.pts[i] = s.cts - shift;
    table.dts[i] = s.dts - shift;
    if (isShown(window, table.pts[i]!)) shown++;
  }
  if (shown === 0)
    throw new MediaIndexError(
      IndexErrorCode.CORRUPT,
      `video track ${track.id}'s edit list shows none of its ${n} samples`,
    );
  const width = entry.width || track.video?.width || 0;
  const height = entry.height || track.video?.height || 0;
  if (width <= 0 || height <= 0)
    throw new MediaIndexError(IndexErrorCode.CORRUPT, `video track ${track.id} has no dimensions (${width}x${height})`);
  const timescale = track.timescale > 0 ? track.timescale : 1;
  const span = Math.max(track.samples_duration, 0);
  const shownSpan = window?.end !== undefined ? Math.min(window.end - window.start, span) : span;
  return {
    trackId: track.id,
    codec,
    codecString: track.codec,
    extradata,
    width,
    height,
    fps: span > 0 ? (n * timescale) / span : 0,
    timescale,
    duration: shownSpan / timescale,
    rotation: rotationOf(track.matrix),
    frameCount: shown,
    ...(window ? { edit: window } : {}),
    samples: table,
  };
}
