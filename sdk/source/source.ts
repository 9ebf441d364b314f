import type { EntryColumns } from "../../common/dataset-table/entry-columns.js";
import type { IndexV1, MediaKind } from "../../common/schema/index.js";
import type { SdkError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";

/** One object of a dataset as its source lists it. */
export interface DatasetObject {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
  /** Guessed from the key; the index says for sure. */
  readonly kind: MediaKind;
}

/** Objects by position: an array, or a table's columns (each object made when asked for). */
export interface ObjectList {
  readonly length: number;
  at(i: number): DatasetObject | undefined;
}

/**
 * The objects of a list, each made: for tests and tools that want an array.
 *
 * @example
 * listedObjects((await source.list()).objects).map((o) => o.key);
 */
export function listedObjects(objects: ObjectList): DatasetObject[] {
  return Array.from({ length: objects.length }, (_, i) => objects.at(i)!);
}

export interface DatasetListing {
  readonly objects: ObjectList;
  /** Runs of objects (indices into `objects`) the shard shuffle permutes; together they cover every object once. */
  readonly shards: readonly { readonly objects: readonly number[] }[];
  /** The dataset table's entry of each object (same order as `objects`) when the source has one: planning needs no index then. */
  readonly entries?: EntryColumns;
  /** The SetDigest of the objects' (key, etag) where the source has it without hashing each (a table head's page summaries). */
  readonly digest?: string;
  /** The table generation listed, which a checkpoint pins. */
  readonly generation?: number;
  /** Something the caller should hear once (e.g. no table yet: planned from every index). */
  readonly notice?: SdkError;
}

/** A byte range the pipeline will read soon, for the cache to prefetch. */
export interface PlannedRange {
  readonly object: DatasetObject;
  readonly offset: number;
  readonly length: number;
}

/** Counters a source keeps about the bytes it moved. */
export interface SourceStats {
  /** Bytes pulled from upstream (the edge, the bucket, the disk), cache block rounding included. */
  readonly bytesFetched: number;
  readonly cacheHits: number;
  readonly cacheMisses: number;
}

/**
 * Where a dataset's objects come from: an edge, a bucket, a local directory. The pipeline
 * never knows which; a new one is a factory in the source registry.
 */
export interface DatasetSource {
  /** Every object under the dataset, in a stable order; `generation` pins a table generation where the source has tables. */
  list(opts?: { readonly generation?: number | undefined }): Promise<DatasetListing>;
  /** The object's zero-prep index (kind "error" for a corrupt object, never a throw). */
  index(object: DatasetObject): Promise<IndexV1>;
  /** Exactly `length` bytes of the object from `offset`. */
  read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array>;
  /** Ranges wanted next, soonest first; a hint, never awaited for correctness. */
  plan(ranges: readonly PlannedRange[]): void;
  stats(): SourceStats;
  /**
   * Lets go of what is held between reads only (open files), once a stream's iteration ended:
   * a consumer that never calls `close()` leaves nothing for the garbage collector to close.
   * The source stays usable.
   */
  release?(): Promise<void>;
  close(): Promise<void>;
}

export type SourceFactory = (url: URL, options: ResolvedOptions) => Promise<DatasetSource>;
