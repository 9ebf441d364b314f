/**
 * The memory one index build may hold, whatever the object declares. A Worker isolate has
 * 128 MB for every request it serves at once; an object whose declared sizes ran a build past
 * it was killed, not recorded, so the queue retried it and every GET of its index tried again.
 * Every size a file declares is bounded by these figures before it sizes a read or a table, and
 * an object past them is an ERR_INDEX_MEMORY_LIMIT record, the first time.
 *
 * Half the budget is for bytes read (one range read, a window, a Matroska header element, an
 * MP4's header boxes, an MPEG-TS access unit, and the copy made of them), half for the sample
 * table: a sample costs far more while it is collected (mp4box's object per sample, JS arrays)
 * than in the finished index (29 bytes).
 */
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import { MAX_SAMPLES } from "./sample-bounds.js";

/** The edge's figure (and buildIndex's default): well under a Worker's 128 MB. */
export const INDEX_MEMORY_BYTES = 32 << 20;

/** A training host's figure (local files, a bucket read directly): the same bounds, scaled. */
export const HOST_INDEX_MEMORY_BYTES = 256 << 20;

/** Peak bytes per sample while an MP4 is parsed: mp4box's object per sample, then the typed columns. */
const MP4_SAMPLE_BYTES = 192;
/** Peak bytes per sample of a forward walk (Matroska, MPEG-TS): JS arrays, then the typed columns. */
const WALK_SAMPLE_BYTES = 96;

/** The bounds one build derives from its budget. */
export interface IndexMemory {
  readonly bytes: number;
  /** The largest one range read may be. */
  readonly maxRead: number;
  /** The most header bytes an MP4 may have (moov and moofs, parsed into JS arrays of several times their size). */
  readonly maxMp4Header: number;
  /** The most bytes one MPEG-TS access unit may span. */
  readonly maxAccessUnit: number;
  /** Top-level MP4 boxes a walk may list. */
  readonly maxBoxes: number;
  readonly maxMp4Samples: number;
  readonly maxWalkSamples: number;
}

/**
 * The bounds of a build allowed `bytes` of memory.
 *
 * @example
 * indexMemory(INDEX_MEMORY_BYTES).maxMp4Samples; // 87381
 */
export function indexMemory(bytes = INDEX_MEMORY_BYTES): IndexMemory {
  const half = Math.floor(bytes / 2);
  return {
    bytes,
    maxRead: Math.floor(bytes / 4),
    maxMp4Header: Math.floor(bytes / 8),
    maxAccessUnit: Math.floor(bytes / 8),
    maxBoxes: Math.floor(half / 64),
    maxMp4Samples: Math.min(MAX_SAMPLES, Math.floor(half / MP4_SAMPLE_BYTES)),
    maxWalkSamples: Math.min(MAX_SAMPLES, Math.floor(half / WALK_SAMPLE_BYTES)),
  };
}

/** An object past its build's memory: "`what`, past the 32 MiB one index build may hold". */
export function overMemory(what: string, memory: IndexMemory): MediaIndexError {
  return new MediaIndexError(
    IndexErrorCode.MEMORY_LIMIT,
    `${what}, past the ${memory.bytes / 2 ** 20} MiB one index build may hold`,
  );
}
