/** The zero-prep index: one module used by the edge (workerd) and the SDK (Node). No node: imports. */
export { buildIndex } from "./build.js";
export { decodeIndex, encodeIndex, INDEX_FORMAT_VERSION } from "./codec.js";
export { isShown } from "./edit-window.js";
export { ERR_INDEX_DECODE, IndexErrorCode, MediaIndexError } from "./errors.js";
export { guessKind } from "./kind.js";
export { STREAMED_FORMATS } from "./container.js";
export { notStreamed } from "./streamable.js";
export { tsAccessUnit } from "./mpegts.js";
export { bytesReader, MAX_INDEX_READS, type RangeReader } from "./range-reader.js";
export { HOST_INDEX_MEMORY_BYTES, INDEX_MEMORY_BYTES } from "./index-memory.js";
export { indexToJson, summarizeIndex, type IndexSummary } from "./summary.js";
