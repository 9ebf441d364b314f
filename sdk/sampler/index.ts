export {
  clipStarts,
  clipFrames,
  gopsOf,
  makePlan,
  type ClipPlan,
  type ClipRef,
  type PlannedObject,
  type PlannedShard,
} from "./clip-plan.js";
export { frameOrder, decodeSpan, type FrameOrder, type DecodeSpan } from "./frame-order.js";
export {
  epochOrder,
  epochStream,
  registerShuffle,
  shuffleAlgorithm,
  shuffleNames,
  bufferShuffle,
  bufferShuffled,
  interleaveRuns,
  interleaved,
  GOP_INTERLEAVE,
  type ShuffleAlgorithm,
  type ShuffleParams,
} from "./shuffle.js";
export { partition } from "./partition.js";
export { seededRng, type Rng } from "./rng.js";
