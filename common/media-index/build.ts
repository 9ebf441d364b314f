import type { IndexV1, MediaKind, VideoTrackV1 } from "../schema/index.js";
import { sniffContainer, STREAMED_FORMATS } from "./container.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import { indexImage, sniffImage } from "./image.js";
import { guessKind } from "./kind.js";
import { indexMatroska, looksLikeMatroska } from "./matroska.js";
import { indexMp4, looksLikeMp4 } from "./mp4.js";
import { indexMpegTs, tsPacketSize } from "./mpegts.js";
import { indexNpy, looksLikeNpy } from "./npy.js";
import { HeadCachedReader, type RangeReader } from "./range-reader.js";
import { indexMemory, INDEX_MEMORY_BYTES } from "./index-memory.js";

type Fields = Pick<IndexV1, "kind" | "video" | "moreVideo" | "image" | "array">;

/** The first video track streams by default; the others are there for the `track` option. */
function videoFields([video, ...more]: VideoTrackV1[]): Fields {
  return { kind: "video", video, ...(more.length > 0 ? { moreVideo: more } : {}) };
}

/** A format: recognised from the object's first bytes, then indexed from range reads. */
interface FormatIndexer {
  sniff(head: Uint8Array): boolean;
  index(reader: HeadCachedReader, head: Uint8Array): Promise<Fields>;
}

const formats = new Map<string, FormatIndexer>([
  ["mp4", { sniff: looksLikeMp4, index: async (r) => videoFields(await indexMp4(r)) }],
  ["matroska", { sniff: looksLikeMatroska, index: async (r) => videoFields(await indexMatroska(r)) }],
  [
    "mpegts",
    {
      sniff: (h) => tsPacketSize(h) !== undefined,
      index: async (r, h) => videoFields(await indexMpegTs(r, tsPacketSize(h)!)),
    },
  ],
  [
    "image",
    {
      sniff: (h) => sniffImage(h) !== undefined,
      index: async (r, h) => ({ kind: "image", image: await indexImage(r, sniffImage(h)!) }),
    },
  ],
  ["npy", { sniff: looksLikeNpy, index: async (r) => ({ kind: "array", array: await indexNpy(r) }) }],
]);

/** Enough for four MPEG-TS packets; served from the head read every index starts with. */
const SNIFF_BYTES = 1024;

/**
 * Builds the index of one object from range reads: the container header, never the media
 * data. Never throws for bad media: a corrupt, truncated or unsupported object yields
 * kind "error" with `{ code, message }`, and so does an empty object or a container ec
 * recognises but does not stream (ERR_KIND_UNSUPPORTED naming it). Objects of no known
 * format are kind "other".
 * Only a failing reader throws (MediaIndexError ERR_READ_FAILED), since that is no fact
 * about the object worth caching. `maxReads` caps the range requests (a Worker's
 * subrequest budget); past it the result is an ERR_HEADER_TOO_LARGE record. `memoryBytes`
 * (INDEX_MEMORY_BYTES, 32 MiB, unless given) bounds what the build holds whatever the object
 * declares; past it the result is an ERR_INDEX_MEMORY_LIMIT record.
 *
 * @example
 * const index = await buildIndex({ size, read: (o, n) => readRange(o, n) }, { key: "clips/a.mp4", etag });
 * if (index.kind === "video") console.log(index.video!.frameCount);
 */
export async function buildIndex(
  reader: RangeReader,
  meta: { key: string; etag: string; maxReads?: number; memoryBytes?: number },
): Promise<IndexV1> {
  const base = { version: 1 as const, key: meta.key, etag: meta.etag, size: reader.size };
  const expected: MediaKind = guessKind(meta.key);
  const error = (code: string, message: string): IndexV1 => ({ ...base, kind: "error", error: { code, message } });
  try {
    if (reader.size === 0) {
      return error(
        IndexErrorCode.EMPTY,
        expected === "other"
          ? `${meta.key} is empty (0 bytes)`
          : `${meta.key} is empty but its extension says ${expected}`,
      );
    }
    const memory = indexMemory(meta.memoryBytes ?? INDEX_MEMORY_BYTES);
    const cached = new HeadCachedReader(reader, undefined, meta.maxReads, memory);
    const head = await cached.read(0, Math.min(SNIFF_BYTES, reader.size));
    for (const format of formats.values()) {
      if (format.sniff(head)) return { ...base, ...(await format.index(cached, head)) };
    }
    const container = sniffContainer(head);
    if (container)
      return error(
        IndexErrorCode.KIND_UNSUPPORTED,
        `${meta.key} is ${container}, which ec does not stream; it streams ${STREAMED_FORMATS}`,
      );
    if (expected === "other") return { ...base, kind: "other" };
    return error(
      IndexErrorCode.UNRECOGNIZED,
      `${meta.key} has a ${expected} extension but its bytes are no supported ${expected} format`,
    );
  } catch (cause) {
    // A failed read says nothing about the media: rethrow so nobody caches it as an error record.
    if (cause instanceof MediaIndexError && cause.code === IndexErrorCode.READ_FAILED) throw cause;
    if (cause instanceof MediaIndexError) return error(cause.code, cause.message);
    // mp4box and DataView throw plain errors on malformed input; still an error record, not a failure.
    return error(IndexErrorCode.CORRUPT, `could not parse ${meta.key}: ${String((cause as Error)?.message ?? cause)}`);
  }
}
