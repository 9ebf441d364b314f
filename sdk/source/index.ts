/** Dataset sources by URL scheme. Importing this module registers the built-in ones. */
import { edgeSource } from "./edge-source.js";
import { localDirSource } from "./local-dir.js";
import { registerSource } from "./registry.js";
import type { SourceFactory } from "./source.js";

// The AWS SDK is loaded only for r2:// and s3:// URLs: it is most of the start-up of a process that streams from an edge.
const s3SourceFactory: SourceFactory = async (url, options) =>
  (await import("./s3/index.js")).s3SourceFactory(url, options);

registerSource("http", edgeSource);
registerSource("https", edgeSource);
registerSource("file", localDirSource);
registerSource("r2", s3SourceFactory);
registerSource("s3", s3SourceFactory);

export { openSource, registerSource } from "./registry.js";
export { LocalDirSource, shardsBySize } from "./local-dir.js";
export { EdgeSource } from "./edge-source.js";
export { listedObjects } from "./source.js";
export { inProcessCache, remoteCache, type ByteCache } from "./cache-client.js";
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
