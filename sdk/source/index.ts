/** Dataset sources by URL scheme. Importing this module registers the built-in ones. */
import { localDirSource } from "./local-dir.js";
import { registerSource } from "./registry.js";
import { s3SourceFactory } from "./s3/index.js";

registerSource("file", localDirSource);
registerSource("r2", s3SourceFactory);
registerSource("s3", s3SourceFactory);

export { openSource, registerSource } from "./registry.js";
export { LocalDirSource, shardsBySize } from "./local-dir.js";
export type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceFactory, SourceStats } from "./source.js";
