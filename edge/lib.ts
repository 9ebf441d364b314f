/**
 * What other edge routes build on: error classes, middleware factories, key rules and signing.
 * (edge/index.ts is the Worker entry and exports the app only.)
 */
export * from "./errors.js";
export type { EdgeEnv } from "./types.js";
export { bearerAuth, type BearerAuthOptions } from "./middleware/bearer-auth.js";
export { objectKey, type ObjectKeyOptions } from "./middleware/object-key.js";
export { signedUrlAuth, type SignedUrlOptions } from "./middleware/signed-url.js";
export { keyProblem, isValidKey, encodeKeyPath, MAX_KEY_BYTES, RESERVED_PREFIX } from "../common/keys.js";
export { OBJECTS_ROUTE, INDEX_ROUTE, signPath, verifyPath, signedUrl, signedObjectUrl } from "../common/sign.js";
export { parseRange, contentRange, ifRangeHolds, type RangeDecision } from "../common/byte-range.js";
export { evaluatePreconditions, matchesStrong, type Validators } from "./http/conditional.js";
