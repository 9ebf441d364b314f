import { z } from "zod";
import { IndexV1, VideoTrackV1 } from "../schema/index.js";
import { ERR_INDEX_DECODE, MediaIndexError } from "./errors.js";

/**
 * Binary layout (little-endian), version 2 (1 had no edit window: its frames were every sample):
 *   "ECIX" | u16 format version | u16 reserved | u32 metaLength | meta JSON (UTF-8)
 *   | zero padding to 8 | then per video track (video, then moreVideo in order):
 *   f64 offset[n] | f64 pts[n] | f64 dts[n] | u32 size[n] | u8 keyframe[n] | extradata
 * Everything but the per-sample columns and extradata is in the small JSON head, so a
 * 100k-sample index stays ~3 MB of flat columns instead of 100k JSON objects.
 */
const MAGIC = 0x58494345; // "ECIX" read as little-endian u32
/** Bumped when a field changes what an index means, so caches keyed by it never serve an older one. */
export const INDEX_FORMAT_VERSION = 2;
const PREFIX = 12;
/** Bytes per sample across the five columns. */
const SAMPLE_BYTES = 8 * 3 + 4 + 1;

const VideoMeta = VideoTrackV1.omit({ samples: true, extradata: true }).extend({
  samples: z.number().int().nonnegative(),
  extradataLength: z.number().int().nonnegative(),
});
type VideoMeta = z.infer<typeof VideoMeta>;
const Meta = IndexV1.omit({ video: true, moreVideo: true }).extend({
  video: VideoMeta.optional(),
  moreVideo: z.array(VideoMeta).optional(),
});

const pad8 = (n: number) => (n + 7) & ~7;

function trackMeta({ samples, extradata, ...track }: VideoTrackV1): VideoMeta {
  return { ...track, samples: samples.offset.length, extradataLength: extradata.length };
}

function writeTrack(out: Uint8Array, view: DataView, at: number, track: VideoTrackV1): number {
  const s = track.samples;
  const n = s.offset.length;
  for (const column of [s.offset, s.pts, s.dts])
    for (let i = 0; i < n; i++, at += 8) view.setFloat64(at, column[i]!, true);
  for (let i = 0; i < n; i++, at += 4) view.setUint32(at, s.size[i]!, true);
  out.set(s.keyframe.subarray(0, n), at);
  out.set(track.extradata, at + n);
  return at + n + track.extradata.length;
}

/**
 * Encodes an index into its compact binary form (what the edge caches and serves).
 *
 * @example
 * const bytes = encodeIndex(await buildIndex(reader, { key, etag }));
 */
export function encodeIndex(index: IndexV1): Uint8Array {
  const { video, moreVideo, ...rest } = index;
  const tracks = video ? [video, ...(moreVideo ?? [])] : [];
  const meta = {
    ...rest,
    ...(video ? { video: trackMeta(video) } : {}),
    ...(video && moreVideo?.length ? { moreVideo: moreVideo.map(trackMeta) } : {}),
  };
  const metaBytes = new TextEncoder().encode(JSON.stringify(meta));
  const columns = pad8(PREFIX + metaBytes.length);
  const out = new Uint8Array(
    columns + tracks.reduce((a, t) => a + t.samples.offset.length * SAMPLE_BYTES + t.extradata.length, 0),
  );
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint16(4, INDEX_FORMAT_VERSION, true);
  view.setUint32(8, metaBytes.length, true);
  out.set(metaBytes, PREFIX);
  let at = columns;
  for (const track of tracks) at = writeTrack(out, view, at, track);
  return out;
}

function fail(message: string, cause?: unknown): never {
  throw new MediaIndexError(ERR_INDEX_DECODE, message, { cause });
}

/**
 * Decodes and validates an encoded index; throws MediaIndexError ERR_INDEX_DECODE on
 * anything malformed (wrong magic, unknown version, lengths that do not add up).
 *
 * @example
 * const index = decodeIndex(new Uint8Array(await res.arrayBuffer()));
 */
export function decodeIndex(bytes: Uint8Array): IndexV1 {
  if (bytes.length < PREFIX) fail(`expected an encoded index of at least ${PREFIX} bytes but received ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) fail("not an encoded index (bad magic)");
  const version = view.getUint16(4, true);
  if (version !== INDEX_FORMAT_VERSION)
    fail(`expected index format version ${INDEX_FORMAT_VERSION} but received ${version}`);
  const metaLength = view.getUint32(8, true);
  if (PREFIX + metaLength > bytes.length)
    fail(`index head declares ${metaLength} bytes but only ${bytes.length - PREFIX} follow`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes.subarray(PREFIX, PREFIX + metaLength)),
    );
  } catch (cause) {
    fail("index head is not valid JSON", cause);
  }
  const meta = Meta.safeParse(parsed);
  if (!meta.success) fail(`index head does not match IndexV1: ${meta.error.message}`);
  const { video, moreVideo, ...rest } = meta.data;
  const metas = video ? [video, ...(moreVideo ?? [])] : [];
  let at = pad8(PREFIX + metaLength);
  const expected = metas.reduce((a, t) => a + t.samples * SAMPLE_BYTES + t.extradataLength, at);
  if (expected !== bytes.length)
    fail(
      `index of ${metas.map((t) => t.samples).join(" + ") || 0} samples should be ${expected} bytes but is ${bytes.length}`,
    );
  const tracks = metas.map((t) => {
    const n = t.samples;
    const f64 = () => {
      const column = new Float64Array(n);
      for (let i = 0; i < n; i++, at += 8) column[i] = view.getFloat64(at, true);
      return column;
    };
    const offset = f64(),
      pts = f64(),
      dts = f64();
    const size = new Uint32Array(n);
    for (let i = 0; i < n; i++, at += 4) size[i] = view.getUint32(at, true);
    const keyframe = bytes.slice(at, at + n);
    at += n;
    const extradata = bytes.slice(at, at + t.extradataLength);
    at += t.extradataLength;
    const { samples: _count, extradataLength: _len, ...track } = t;
    return { ...track, extradata, samples: { offset, size, keyframe, pts, dts } };
  });
  return IndexV1.parse({
    ...rest,
    ...(tracks[0] ? { video: tracks[0] } : {}),
    ...(tracks.length > 1 ? { moreVideo: tracks.slice(1) } : {}),
  });
}
