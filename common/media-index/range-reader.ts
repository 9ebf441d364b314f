import { IndexErrorCode, MediaIndexError } from "./errors.js";
import { indexMemory, overMemory, type IndexMemory } from "./index-memory.js";

/**
 * Range reads one index build may make where each costs a request: a Worker invocation gets
 * ~1000 subrequests and the edge's route spends a few on head, cache get and put. Only long
 * fragmented files come near it; a crafted MP4 of many tiny top-level boxes costs one read
 * per box past the head, and without the cap a build of it never ends.
 */
export const MAX_INDEX_READS = 900;

/** Random access to one object's bytes: R2 range gets on the edge, a file handle in Node. */
export interface RangeReader {
  /** Total size of the object in bytes. */
  size: number;
  /** Exactly `length` bytes starting at `offset` (the caller never reads past `size`). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/**
 * A RangeReader over bytes already in memory.
 *
 * @example
 * const index = await buildIndex(bytesReader(bytes), { key: "a.mp4", etag: "x" });
 */
export function bytesReader(bytes: Uint8Array): RangeReader {
  return { size: bytes.length, read: async (offset, length) => bytes.subarray(offset, offset + length) };
}

/**
 * Serves small reads from one cached head read so that walking headers costs one range
 * request, not one per header; anything outside the head goes to the underlying reader.
 * No read is larger than `memory.maxRead`, whatever size the object declares for it.
 */
export class HeadCachedReader {
  readonly size: number;
  /** The bounds of this build's memory, for the format indexers. */
  readonly memory: IndexMemory;
  private head: Uint8Array | undefined;
  /** Ranges actually requested from the underlying reader, for tests and metrics. */
  readonly requests: { offset: number; length: number }[] = [];

  constructor(
    private readonly inner: RangeReader,
    private readonly headBytes = 64 * 1024,
    private readonly maxReads = Number.POSITIVE_INFINITY,
    memory: IndexMemory = indexMemory(),
  ) {
    this.size = inner.size;
    this.memory = memory;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (offset < 0 || length < 0 || offset + length > this.size) {
      throw new MediaIndexError(
        IndexErrorCode.TRUNCATED,
        `read of ${length} bytes at ${offset} runs past the end of a ${this.size}-byte object`,
      );
    }
    if (offset + length <= this.headBytes) {
      const head = await this.loadHead();
      if (offset + length <= head.length) return head.subarray(offset, offset + length);
    }
    return this.fetch(offset, length);
  }

  private async loadHead(): Promise<Uint8Array> {
    this.head ??= await this.fetch(0, Math.min(this.headBytes, this.size));
    return this.head;
  }

  private async fetch(offset: number, length: number): Promise<Uint8Array> {
    if (length > this.memory.maxRead)
      throw overMemory(`a read of ${length} bytes at ${offset} (a size the object declares)`, this.memory);
    if (this.requests.length >= this.maxReads) {
      throw new MediaIndexError(
        IndexErrorCode.TOO_LARGE,
        `indexing needs more than ${this.maxReads} range reads (a long fragmented MP4, or a large Matroska or MPEG-TS object, which is read whole); index it where reads are not capped`,
      );
    }
    this.requests.push({ offset, length });
    let bytes: Uint8Array;
    try {
      bytes = await this.inner.read(offset, length);
    } catch (cause) {
      if (cause instanceof MediaIndexError) throw cause;
      throw new MediaIndexError(
        IndexErrorCode.READ_FAILED,
        `read of ${length} bytes at ${offset} failed: ${String((cause as Error)?.message ?? cause)}`,
        { cause },
      );
    }
    if (bytes.length !== length) {
      throw new MediaIndexError(
        IndexErrorCode.READ_FAILED,
        `expected ${length} bytes at ${offset} but received ${bytes.length}`,
      );
    }
    return bytes;
  }
}
