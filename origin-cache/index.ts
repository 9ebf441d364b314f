/** Public surface of the origin-cache: the HTTP service, the in-process cache, its errors and wire shapes. */
export { startCache, type CacheService, type StartCacheOptions } from "./server.js";
export {
  createRangeCache,
  type RangeCache,
  type ReadOptions,
  type ReadIntoOptions,
  type ObjectOptions,
  type PlanOptions,
  type LocateOptions,
  type Pin,
} from "./range-cache.js";
export type { RangeCacheOptions } from "./options.js";
export { fetchRange, type RangeFetchContext } from "./upstream/range-fetch.js";
export { ANONYMOUS_CLIENT, CacheStats, PlanAck, PlanRange, PlanRequest } from "./schema.js";
export {
  Lease,
  LOCATE_LINES_TYPE,
  LocateBatchLine,
  LocateBatchRequest,
  LocateBatchResponse,
  LocateCompactLine,
  LocateCompactResponse,
  LocateCompactSpan,
  LocatedSpan,
  LocateRequest,
  LocateResponse,
  LocateRun,
  LocateSpan,
} from "../common/schema/cache-locate.js";
export {
  CacheArgumentError,
  CacheClosedError,
  CacheDirError,
  CacheError,
  EtagChangedError,
  LeaseLimitError,
  LeaseNotFoundError,
  LocateUnavailableError,
  MissingEtagError,
  PlanLimitError,
  RangeNotSatisfiableError,
  SignatureExpiredError,
  UpstreamNotAllowedError,
  UpstreamStatusError,
  UpstreamUnavailableError,
} from "./errors.js";
