/**
 * The origin-cache's local data plane: `POST /v1/locate` tells a client on the same host where a
 * span's bytes lie in the cache's slab files, under a lease that keeps those slots from being
 * evicted or overwritten until `DELETE /v1/lease/{id}` or the lease's expiry.
 */
import { z } from "zod";
import { ErrorBody } from "../errors.js";
import { ObjectId, ObjectRef } from "./object-ids.js";

/** Longest lease a client may ask for; the default is LOCATE_LEASE_MS. */
export const LOCATE_MAX_LEASE_MS = 10 * 60_000;
export const LOCATE_LEASE_MS = 30_000;

export const LocateRequest = z.object({
  /** The object: a signed edge URL under one of the cache's upstreams, as for GET /v1/fetch. */
  url: z.string().min(1),
  /** The version the caller expects (the manifest's ETag); another one is ERR_ETAG_CHANGED. */
  etag: z.string().min(1).optional(),
  offset: z.number().int().nonnegative(),
  length: z.number().int().positive(),
  /** How long the lease lasts unless released first. */
  leaseMs: z.number().int().positive().max(LOCATE_MAX_LEASE_MS).optional(),
  /**
   * Leases of earlier locates this client is done with, ended before this one is answered (as by
   * DELETE /v1/lease/{id}, without a request each); ids no longer held are ignored.
   */
  release: z.array(z.string().min(1).max(100)).max(1024).optional(),
});
export type LocateRequest = z.infer<typeof LocateRequest>;

/** Bytes `[offset, offset + length)` of the slab file at `path` (an absolute path on the cache's host). */
export const LocateRun = z.object({
  path: z.string().min(1),
  offset: z.number().int().nonnegative(),
  length: z.number().int().positive(),
});
export type LocateRun = z.infer<typeof LocateRun>;

export const Lease = z.object({
  id: z.string().min(1),
  /** Epoch milliseconds after which the slots may be reused. */
  expiresAt: z.number().int(),
});
export type Lease = z.infer<typeof Lease>;

export const LocateResponse = z.object({
  /** The pinned version the runs hold. */
  etag: z.string().min(1),
  /** The object's size in bytes. */
  size: z.number().int().nonnegative(),
  /** The span's bytes are these runs' bytes, in order, end to end. */
  runs: z.array(LocateRun),
  lease: Lease,
});
export type LocateResponse = z.infer<typeof LocateResponse>;

/** Most spans one batched locate names: a prefetch window of clips, with room to spare. */
export const LOCATE_MAX_SPANS = 512;

/**
 * One span of a batched locate: as a single locate names it, and optionally `min`, the bytes from
 * `offset` on that must be stored: the rest of the span up to `length` is located as far as it is
 * stored (a read may run a little past its planned span), so the answer may be shorter than asked.
 */
export const LocateSpan = LocateRequest.pick({ url: true, etag: true, offset: true, length: true }).extend({
  min: z.number().int().positive().optional(),
});
export type LocateSpan = z.infer<typeof LocateSpan>;

/** A span of an object named by its id (object-ids.ts) instead of its URL and ETag. */
export const LocateSpanById = LocateSpan.omit({ url: true, etag: true }).extend({ object: ObjectId });
export type LocateSpanById = z.infer<typeof LocateSpanById>;

/** Longest a long-polled batch (`waitMs`) may wait for its spans to be stored. */
export const LOCATE_MAX_WAIT_MS = 120_000;

/**
 * A batched locate: where each span lies, for the spans wholly stored now. Without `waitMs`
 * nothing is pulled for it, so it answers at once (LocateBatchResponse); a span it leaves out is
 * read (and pulled) the ordinary way. With `waitMs` the cache pulls what the spans lack, soonest
 * first, and answers as newline-delimited JSON (LocateBatchLine): the spans stored now at once,
 * then each other span once it is stored, and every span not answered within `waitMs` as null.
 */
export const LocateBatchRequest = LocateRequest.pick({ leaseMs: true, release: true }).extend({
  spans: z
    .array(z.union([LocateSpan, LocateSpanById]))
    .min(1)
    .max(LOCATE_MAX_SPANS),
  /** Whose ids the spans' `object`s are, and the objects this request registers (or refreshes). */
  client: z.string().min(1).max(256).optional(),
  objects: z.array(ObjectRef).max(LOCATE_MAX_SPANS).optional(),
  waitMs: z.number().int().positive().max(LOCATE_MAX_WAIT_MS).optional(),
  /** `"compact"`: the answer's runs as LocateCompactSpan (each slab path once), not LocateRun objects. */
  form: z.enum(["compact"]).optional(),
});
export type LocateBatchRequest = z.infer<typeof LocateBatchRequest>;

export const LocatedSpan = LocateResponse.omit({ lease: true });
export type LocatedSpan = z.infer<typeof LocatedSpan>;

export const LocateBatchResponse = z.object({
  /**
   * Each span asked for, in order: its runs (for a span with `min`, the runs of its stored bytes
   * from `offset` on, at least `min` of them), or null where it is not wholly stored now, or its
   * object is not pinned at the asked version yet, or the span is invalid (a GET says why).
   */
  spans: z.array(LocatedSpan.nullable()),
  /** One lease over every located span; absent when none is. */
  lease: Lease.optional(),
});
export type LocateBatchResponse = z.infer<typeof LocateBatchResponse>;

/** The media type of a long-polled batch's answer: one LocateBatchLine per line. */
export const LOCATE_LINES_TYPE = "application/x-ndjson";

/**
 * One line of a long-polled batch's answer. Every span of the request is answered by exactly one
 * line: `at` names the spans (their indexes in the request), `spans` their answers in that order,
 * under `lease` (one per line, absent when every answer is null). A null with `error` is a span
 * the cache could not get (the error a single locate of it answers, e.g. ERR_ETAG_CHANGED); a
 * null without one was not stored by the deadline, or its request is invalid.
 */
export const LocateBatchLine = LocateBatchResponse.extend({
  at: z.array(z.number().int().nonnegative()).min(1),
  error: ErrorBody.shape.error.optional(),
});
export type LocateBatchLine = z.infer<typeof LocateBatchLine>;

/**
 * A located span in a compact answer: `runs` is a flat list of triples (index into the answer's
 * `paths`, offset, length), so a batch names each slab file once, not once per run.
 */
export const LocateCompactSpan = LocatedSpan.omit({ runs: true }).extend({
  runs: z.array(z.number().int().nonnegative()),
});
export type LocateCompactSpan = z.infer<typeof LocateCompactSpan>;

/** LocateBatchResponse in the compact form (`"form": "compact"`): the slab paths once, runs by number. */
export const LocateCompactResponse = LocateBatchResponse.omit({ spans: true }).extend({
  paths: z.array(z.string().min(1)),
  spans: z.array(LocateCompactSpan.nullable()),
});
export type LocateCompactResponse = z.infer<typeof LocateCompactResponse>;

/** LocateBatchLine in the compact form: each line has its own table of paths. */
export const LocateCompactLine = LocateCompactResponse.extend(LocateBatchLine.pick({ at: true, error: true }).shape);
export type LocateCompactLine = z.infer<typeof LocateCompactLine>;
