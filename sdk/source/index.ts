/** Dataset sources by URL scheme. Importing this module registers the built-in ones. */
import { edgeSource } from "./edge-source.js";
import { localDirSource } from "./local-dir.js";
import { registerSource } from "./registry.js";
import { s3SourceFactory } from "./s3/index.js";

registerSource("http", edgeSource);
registerSource("https", edgeSource);
registerSource("file", localDirSource);
registerSource("r2", s3SourceFactory);
registerSource("s3", s3SourceFactory);

export { openSource, registerSource } from "./registry.js";
export { LocalDirSource, shardsBySize } from "./local-dir.js";
export { EdgeSource } from "./edge-source.js";
export { inProcessCache, remoteCache, type ByteCache } from "./cache-client.js";
export type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceFactory, SourceStats } from "./source.js";
