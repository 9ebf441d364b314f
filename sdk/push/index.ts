/** Uploading a directory as a dataset: through the edge, or straight to an R2/S3 bucket. */
export {
  pushDir,
  pushDirWithProgress,
  PushError,
  type PushOptions,
  type PushedFile,
  type PushSummary,
} from "./push-edge.js";
export { pushToBucket, type BucketPushOptions, type BucketPushSummary } from "./push-s3.js";
export { pushProgress } from "./progress.js";
export { CONTENT_TYPES, listFiles, type PushHooks } from "./run-push.js";
