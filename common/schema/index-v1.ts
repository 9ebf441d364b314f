import { z } from "zod";

/** What an object is, from its index (the manifest guesses it from the key's extension). */
export const MediaKind = z.enum(["video", "image", "array", "other", "error"]);
export type MediaKind = z.infer<typeof MediaKind>;

// Appended, never reordered: the dataset table stores a codec as its position here.
export const VideoCodec = z.enum(["h264", "hevc", "av1", "vp9", "vp8"]);
export type VideoCodec = z.infer<typeof VideoCodec>;

/**
 * Per-sample columns of one video track, in decode (file) order — the order of
 * `ffprobe -show_packets`. Offsets are absolute byte positions in the object; pts/dts
 * are in `timescale` units with the edit list's start subtracted, so they equal ffprobe's
 * (dts may be negative with B-frames; pts too, for samples an edit list drops). Float64 holds every integer below 2^53 exactly.
 */
export const SampleTableV1 = z.object({
  offset: z.instanceof(Float64Array),
  size: z.instanceof(Uint32Array),
  keyframe: z.instanceof(Uint8Array),
  pts: z.instanceof(Float64Array),
  dts: z.instanceof(Float64Array),
});
export type SampleTableV1 = z.infer<typeof SampleTableV1>;

export const VideoTrackV1 = z.object({
  trackId: z.number().int().nonnegative(),
  codec: VideoCodec,
  /** RFC 6381 codec string, e.g. "avc1.64001f". */
  codecString: z.string(),
  /** The codec configuration record payload: avcC, hvcC, av1C or vpcC box contents. */
  extradata: z.instanceof(Uint8Array),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  fps: z.number().nonnegative(),
  timescale: z.number().int().positive(),
  /** Seconds. */
  duration: z.number().nonnegative(),
  /**
   * Degrees clockwise the coded frames turn to display upright (the MP4 track's display
   * matrix, as ffmpeg's autorotate applies it); absent means 0. Frames are delivered as coded
   * unless `rotate: "auto"` asks for them turned.
   */
  rotation: z.union([z.literal(0), z.literal(90), z.literal(180), z.literal(270)]).optional(),
  /**
   * An MPEG-TS stream: each sample's offset/size is the run of TS packets (of `packetSize`,
   * interleaved with other streams) that carry its access unit on `pid`; the pipeline takes the
   * payload back out (tsAccessUnit). Absent: samples are their bytes, as in MP4 and Matroska.
   */
  mpegts: z
    .object({ pid: z.number().int().nonnegative(), packetSize: z.union([z.literal(188), z.literal(192)]) })
    .optional(),
  /** Frames shown (those in `edit`'s window; every sample when there is none). */
  frameCount: z.number().int().nonnegative(),
  /**
   * The window an MP4 edit list (elst) shows, on the pts clock: ffmpeg outputs the samples with
   * start <= pts < end (no end: to the last sample) and decodes but drops the rest, e.g. the
   * frames before the cut point of `ffmpeg -ss 2.5 -c copy`. Absent: every sample is shown.
   */
  edit: z.object({ start: z.number(), end: z.number().optional() }).optional(),
  samples: SampleTableV1,
});
export type VideoTrackV1 = z.infer<typeof VideoTrackV1>;

export const ImageInfoV1 = z.object({
  format: z.enum(["jpeg", "png", "webp"]),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  channels: z.number().int().positive(),
});
export type ImageInfoV1 = z.infer<typeof ImageInfoV1>;

export const ArrayInfoV1 = z.object({
  /** numpy dtype descr, e.g. "<f4". */
  dtype: z.string(),
  shape: z.array(z.number().int().nonnegative()),
  fortranOrder: z.boolean(),
  /** Byte offset of the first element. */
  dataOffset: z.number().int().nonnegative(),
});
export type ArrayInfoV1 = z.infer<typeof ArrayInfoV1>;

export const IndexErrorV1 = z.object({ code: z.string(), message: z.string() });
export type IndexErrorV1 = z.infer<typeof IndexErrorV1>;

/** The index of one object, as decoded from its compact binary encoding. */
export const IndexV1 = z.object({
  version: z.literal(1),
  key: z.string(),
  etag: z.string(),
  size: z.number().int().nonnegative(),
  kind: MediaKind,
  /** The first video track with a supported codec (what `track: 0`, the default, streams). */
  video: VideoTrackV1.optional(),
  /** The object's further video tracks with a supported codec, in file order (`track: 1`, `2`, …). */
  moreVideo: z.array(VideoTrackV1).optional(),
  image: ImageInfoV1.optional(),
  array: ArrayInfoV1.optional(),
  /** Set when kind is "error": corrupt, truncated or unsupported. */
  error: IndexErrorV1.optional(),
});
export type IndexV1 = z.infer<typeof IndexV1>;
