import type { EntryColumns } from "../../common/dataset-table/entry-columns.js";
import type { IndexV1, MediaKind } from "../../common/schema/index.js";
import type { SdkError } from "../errors.js";
import type { EdgeKeysInput } from "./edge-keys-option.js";
import type { S3Env } from "./s3/s3-env.js";
import type { S3Options } from "./s3/s3-url.js";

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
  /** Object i where `at` has it no longer: a table read lazily reads its page again (its cache dropped it). */
  load?(i: number): Promise<DatasetObject | undefined>;
}

/**
 * Object i of a list, its page read again where a table read lazily dropped it under its cache's
 * cap (what the pipeline asks for each clip it fetches or decodes).
 *
 * @example
 * const object = (await objectOf(listing.objects, clip.ref.object))!;
 */
export async function objectOf(objects: ObjectList, i: number): Promise<DatasetObject | undefined> {
  return objects.at(i) ?? (await objects.load?.(i));
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

/** The bucket options of an r2:// or s3:// source, with the environment they default from. */
export type BucketOptions = S3Options & { readonly env: S3Env };

/**
 * What a source is opened with: the slice of `open()`'s options about where the bytes come from
 * (resolveOptions builds it as `source`). Each source reads its own part of it.
 */
export interface SourceOptions {
  /** origin-cache URL; absent: an in-process cache of `cacheBytes`. */
  readonly cache?: string;
  /** With a loopback `cache`: read its hits from its slab files unless false. */
  readonly cacheLocal?: boolean;
  readonly cacheBytes: number;
  /** This process's rank: names its plans at a shared origin-cache. */
  readonly rank: number;
  /** The edge's bearer token (http:// and https:// only). */
  readonly token?: string;
  /** The keys manifests and tables must be signed with. */
  readonly edgeKeys?: EdgeKeysInput;
  /** Without `edgeKeys`: the file of keys first seen per edge (knownEdgesPath of the environment). */
  readonly knownEdges: string;
  /** r2:// and s3:// only. */
  readonly bucket: BucketOptions;
}

export type SourceFactory = (url: URL, options: SourceOptions) => Promise<DatasetSource>;
