/**
 * ec's internal surface (`ec/internal`): the parts `open()` is built from, for embedders, tests,
 * benchmarks and the CLI. No promise of stability: names here change with the code. Users
 * import from `ec` (sdk/index.ts).
 */
export * from "./index.js";
export type { OpenParts } from "./open.js";
export { resolveOptions, type ResolvedOptions } from "./options.js";
export type {
  DecodeClip,
  DecodeRequest,
  DecodeImage,
  DecodeImageRequest,
  Packet,
} from "./pipeline/decode.js";
export { resolveLabelers, labelClip, MemoryLabelCache } from "./labels/index.js";
