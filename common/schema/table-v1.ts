import { z } from "zod";
import { IndexErrorV1, MediaKind, VideoCodec } from "./index-v1.js";

/**
 * One object of a dataset table: what planning needs and nothing more, so a client plans an
 * epoch of millions of objects without reading an index. `frames` is the video's sample count
 * and `keyframes` the presentation indices of its keyframes (what the clip sampler aligns to);
 * an object whose index is an error record keeps that record here.
 */
export const TableEntryV1 = z.object({
  key: z.string(),
  size: z.number().int().nonnegative(),
  /** The object's ETag as its HTTP header carries it (quoted). */
  etag: z.string(),
  kind: MediaKind,
  frames: z.number().int().nonnegative().optional(),
  keyframes: z.array(z.number().int().nonnegative()).optional(),
  codec: VideoCodec.optional(),
  width: z.number().int().positive().optional(),
  height: z.number().int().positive().optional(),
  error: IndexErrorV1.optional(),
});
export type TableEntryV1 = z.infer<typeof TableEntryV1>;

/** A page of a table: entries in key order (UTF-8 byte order, R2's listing order). Immutable once written. */
export const TablePageV1 = z.object({
  version: z.literal(1),
  root: z.string(),
  entries: z.array(TableEntryV1),
});
export type TablePageV1 = z.infer<typeof TablePageV1>;

/** A page's or directory page's name under the table's `pages/`: `{generation}-{n}`. */
const PageName = z.string().regex(/^[0-9]+-[0-9]+$/);

/**
 * The summary fields a page ref and a directory ref share (the directory's are its pages' sums),
 * in the order both refs list them.
 */
const SUMMARY = {
  digest: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional(),
  frames: z.number().int().nonnegative().optional(),
  keyframes: z.number().int().nonnegative().optional(),
  errors: z.number().int().nonnegative().optional(),
};

/** Where a page sits in a generation: its name under the table's `pages/`, its key range, its digest. */
export const TablePageRefV1 = z.object({
  name: PageName,
  first: z.string(),
  last: z.string(),
  count: z.number().int().positive(),
  /** Objects' bytes in the page (so a client sizes shards without it). */
  bytes: z.number().int().nonnegative(),
  /** base64url SHA-256 of the page's JSON bytes: the signed head vouches for every page. */
  sha256: z.string(),
  /**
   * The page's objects summed up, so a client has what planning needs of the whole table from
   * the head: `digest` the SetDigest of their (key, etag), `frames` and `keyframes` their video
   * frames and keyframes, `errors` those with an error record. Absent on pages written before
   * (a client then reads the page).
   */
  ...SUMMARY,
  /**
   * base64url SHA-256 of the page's pins (its etags, stored apart: page-pins.ts), where the page
   * leaves them out (page format 3): a client fetches them only ahead of reading an object.
   */
  pins: z.string().optional(),
  /**
   * The page's virtual shards under the page-local rule (common/page-shards.ts) at the head's
   * `shardBytes`: a shard never crosses a page, so a client counts a table's shards from the
   * page list alone. Absent on pages written before (a client then reads the page).
   */
  shards: z.number().int().nonnegative().optional(),
});
export type TablePageRefV1 = z.infer<typeof TablePageRefV1>;

/**
 * A directory page (head format 2): up to DIRECTORY_MAX page refs in key order, stored gzip
 * under the table's `pages/` like a page (and named like one, `{generation}-{n}`), immutable,
 * its SHA-256 named by the signed head. A generation rewrites only the directory pages its
 * changed pages fall into.
 */
export const TableDirectoryV1 = z.object({
  directory: z.literal(1),
  root: z.string(),
  pages: z.array(TablePageRefV1).min(1),
});
export type TableDirectoryV1 = z.infer<typeof TableDirectoryV1>;

/**
 * Where a directory page sits in a generation, with its pages summed up so a client maps a
 * page index or an entry index to the directory that holds it (prefix sums of `pages` and
 * `count`) and has the dataset's totals without reading any directory.
 */
export const TableDirectoryRefV1 = z.object({
  name: PageName,
  /** base64url SHA-256 of the directory page's JSON bytes. */
  sha256: z.string(),
  /** The first key of its first page and the last of its last. */
  first: z.string(),
  last: z.string(),
  /** Pages it lists. */
  pages: z.number().int().positive(),
  /** Entries (objects) of its pages, and their bytes. */
  count: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  /** Sums of its pages' summaries; absent where one of its pages lacks it (written before summaries or page-local shards). */
  ...SUMMARY,
  shards: z.number().int().nonnegative().optional(),
});
export type TableDirectoryRefV1 = z.infer<typeof TableDirectoryRefV1>;

/**
 * One generation of a dataset root's table (the first segment of its keys, e.g. "gameplay"),
 * head format 1: every page listed in the head, in key order. Written before directory pages;
 * still read (and published over: the next generation is written in format 2). A generation never changes; new objects appear in the next one, and
 * an epoch's order and a resume checkpoint name the generation they were planned from.
 */
export const TableHeadPagesV1 = z.object({
  version: z.literal(1),
  root: z.string(),
  generation: z.number().int().positive(),
  createdAt: z.number().int(),
  /** The edge's virtual-shard target, so clients group shards as the manifest would. */
  shardBytes: z.number().int().positive(),
  objects: z.number().int().nonnegative(),
  pages: z.array(TablePageRefV1),
});
export type TableHeadPagesV1 = z.infer<typeof TableHeadPagesV1>;

/**
 * Head format 2: the generation's directory pages in key order (each lists up to
 * DIRECTORY_MAX pages), summed up, so the head stays a few KB at 10^7 objects and a
 * generation that changes k pages writes those pages, their directory pages and the head.
 * `shardBytes` is the target the pages' `shards` were counted at: a table keeps the one of
 * its first format-2 generation.
 */
export const TableHeadDirectoriesV1 = z.object({
  version: z.literal(2),
  root: z.string(),
  generation: z.number().int().positive(),
  createdAt: z.number().int(),
  shardBytes: z.number().int().positive(),
  objects: z.number().int().nonnegative(),
  directories: z.array(TableDirectoryRefV1),
});
export type TableHeadDirectoriesV1 = z.infer<typeof TableHeadDirectoriesV1>;

/** Every head a client reads: format 1 (pages listed) or 2 (directory pages listed). */
export const TableHeadV1 = z.discriminatedUnion("version", [TableHeadPagesV1, TableHeadDirectoriesV1]);
export type TableHeadV1 = z.infer<typeof TableHeadV1>;

/** The head format a publisher writes. */
export const TABLE_HEAD_VERSION = 2;

/** How the queue names work: index one object at its current version, remove it, or publish the next generation. */
export const IndexMessageV1 = z.discriminatedUnion("type", [
  z.object({ type: z.literal("index"), key: z.string(), etag: z.string().optional() }),
  z.object({ type: z.literal("publish"), root: z.string() }),
]);
export type IndexMessageV1 = z.infer<typeof IndexMessageV1>;

/** An R2 event notification as it arrives on the queue (the fields ec reads). */
export const R2EventV1 = z.object({
  account: z.string(),
  bucket: z.string(),
  object: z.object({ key: z.string(), size: z.number().optional(), eTag: z.string().optional() }),
  action: z.string(),
  eventTime: z.string().optional(),
});
export type R2EventV1 = z.infer<typeof R2EventV1>;

/** `POST /v1/datasets/{prefix}/urls`: signed URLs for objects a client planned from the table. */
export const SignRequestV1 = z.object({
  objects: z
    .array(z.object({ key: z.string(), etag: z.string() }))
    .min(1)
    .max(1000),
});
export type SignRequestV1 = z.infer<typeof SignRequestV1>;

export const SignedUrlsV1 = z.object({
  expiresAt: z.number().int(),
  objects: z.array(z.object({ key: z.string(), url: z.string().url(), indexUrl: z.string().url() })),
});
export type SignedUrlsV1 = z.infer<typeof SignedUrlsV1>;

/** What `POST /v1/datasets/{prefix}/index` answers: one listing page enqueued. */
export const EnqueuePageV1 = z.object({
  enqueued: z.number().int().nonnegative(),
  cursor: z.string().nullable(),
});
export type EnqueuePageV1 = z.infer<typeof EnqueuePageV1>;
