import { EcError } from "../errors.js";

/**
 * Codes of an index's error record (IndexV1.error.code) and of MediaIndexError. Stable:
 * callers branch on them.
 */
export const IndexErrorCode = {
  /** Zero bytes where the extension promised media. */
  EMPTY: "ERR_EMPTY_OBJECT",
  /** The extension says media but the bytes are no format we know. */
  UNRECOGNIZED: "ERR_UNRECOGNIZED_FORMAT",
  /** A box, segment or header runs past the end of the object. */
  TRUNCATED: "ERR_TRUNCATED",
  /** Structurally invalid: bad box sizes, bad markers, unparsable header. */
  CORRUPT: "ERR_CORRUPT_MEDIA",
  /** MP4 with no moov box anywhere. */
  NO_MOOV: "ERR_NO_MOOV",
  /** Fragments (moof) with no moov: a media segment without its init segment. */
  FRAGMENTED: "ERR_FRAGMENTED_MP4",
  /** MP4 without a video track (audio only, metadata only). */
  NO_VIDEO: "ERR_NO_VIDEO_TRACK",
  /** A container ec recognises but does not stream (Matroska, MPEG-TS, AVI, …), or bytes of no format ec reads. */
  KIND_UNSUPPORTED: "ERR_KIND_UNSUPPORTED",
  /** The object exists but cannot be read (permissions, a dangling link, gone since it was listed). */
  UNREADABLE: "ERR_UNREADABLE_OBJECT",
  /** A video codec outside h264/hevc/av1/vp8/vp9 (the message names it, as ffprobe would). */
  UNSUPPORTED_CODEC: "ERR_UNSUPPORTED_CODEC",
  /** An MP4 edit list beyond delays and one cut (rate changes, dwells, reordered segments). */
  UNSUPPORTED_EDIT_LIST: "ERR_UNSUPPORTED_EDIT_LIST",
  /** More range reads than the build may make (a Worker's subrequest budget). */
  TOO_LARGE: "ERR_HEADER_TOO_LARGE",
  /**
   * Declared sizes (an element, a header, an access unit, a sample count) past the memory one
   * index build may hold (index-memory.ts): recorded as the object's error, never retried.
   */
  MEMORY_LIMIT: "ERR_INDEX_MEMORY_LIMIT",
  /** The object changed or vanished while it was being read. */
  READ_FAILED: "ERR_READ_FAILED",
} as const;
export type IndexErrorCode = (typeof IndexErrorCode)[keyof typeof IndexErrorCode];

/** Thrown inside the indexer (turned into an error record) and by decodeIndex on bad bytes. */
export class MediaIndexError extends EcError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "MediaIndexError";
  }
}

/** Thrown by decodeIndex: the bytes are not a valid encoded index. */
export const ERR_INDEX_DECODE = "ERR_INDEX_DECODE";
