/** Dataset sources by URL scheme. Importing this module registers the built-in ones. */
import { localDirSource } from "./local-dir.js";
import { registerSource } from "./registry.js";

registerSource("file", localDirSource);

export { openSource, registerSource } from "./registry.js";
export { LocalDirSource, shardsBySize } from "./local-dir.js";
export type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceFactory, SourceStats } from "./source.js";
