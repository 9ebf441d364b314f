/** Dataset sources by URL scheme. Importing this module registers the built-in ones. */
import { localDirSource } from "./local-dir.js";
import { registerSource } from "./registry.js";
import type { SourceFactory } from "./source.js";

// The edge's client (undici, the in-process origin-cache with its logger and metrics) is loaded
// only for http(s):// URLs, the AWS SDK only for r2:// and s3:// ones: a stream of local files
// starts without either.
const edgeSourceFactory: SourceFactory = async (url, options) =>
  (await import("./edge-source.js")).edgeSource(url, options);
const s3SourceFactory: SourceFactory = async (url, options) =>
  (await import("./s3/index.js")).s3SourceFactory(url, options);

registerSource("http", edgeSourceFactory);
registerSource("https", edgeSourceFactory);
registerSource("file", localDirSource);
registerSource("r2", s3SourceFactory);
registerSource("s3", s3SourceFactory);

export { openSource, registerSource } from "./registry.js";
export { LocalDirSource, shardsBySize } from "./local-dir.js";
export { listedObjects } from "./source.js";
export type {
  DatasetListing,
  DatasetObject,
  DatasetSource,
  ObjectList,
  PlannedRange,
  SourceFactory,
  SourceOptions,
  SourceStats,
} from "./source.js";
