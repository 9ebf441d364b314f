import { createHash } from "node:crypto";
import type { ResolvedOptions } from "../options.js";
import { clipSpan } from "../options.js";
import { SetDigest } from "../../common/dataset-table/set-digest.js";
import { ORDER_VERSION } from "./order-version.js";

type Sampling = Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align"> & { readonly track?: number };

/**
 * Where clips start in one object (presentation indices). "keyframe": on keyframes at least
 * `hop` apart, so no frame before the clip is decoded; "exact": every `hop` frames from 0.
 *
 * @example
 * clipStarts(30, [0, 12, 24], { frames: 4, stride: 1, align: "keyframe" }); // [0, 12, 24]
 */
export function clipStarts(frameCount: number, keyframes: ArrayLike<number>, o: Sampling): number[] {
  const span = clipSpan(o);
  const hop = o.hop ?? span;
  const starts: number[] = [];
  if (o.align === "exact") {
    for (let s = 0; s + span <= frameCount; s += hop) starts.push(s);
    return starts;
  }
  let next = 0;
  for (let i = 0; i < keyframes.length; i++) {
    const k = keyframes[i]!;
    if (k < next) continue;
    if (k + span > frameCount) break;
    starts.push(k);
    next = k + hop;
  }
  return starts;
}

/** Presentation indices of a clip's frames. */
export function clipFrames(start: number, o: Pick<ResolvedOptions, "frames" | "stride">): number[] {
  return Array.from({ length: o.frames }, (_, i) => start + i * o.stride);
}

/** One object as the planner sees it. */
export interface PlannedObject {
  readonly key: string;
  readonly etag: string;
  readonly starts: readonly number[];
  /** Per start, the keyframe (presentation index) its GOP opens with; absent: each clip is its own GOP. */
  readonly gops?: readonly number[];
}

/**
 * The keyframe at or before each start: clips with the same one share a GOP decode.
 * With `chain`, a clip whose frames reach into the next GOP joins that GOP's clips into its own
 * run (they get its keyframe): one decoder then goes on across the boundary instead of a second
 * one decoding the next GOP's first frames again from its keyframe. A run takes in another GOP
 * only while it opened fewer than `chain.frames` frames before that GOP's keyframe, so the
 * shuffle's units stay about one long GOP's clips.
 *
 * @example
 * gopsOf([0, 16, 32, 300], [0, 300]); // [0, 0, 0, 300]
 * gopsOf([0, 16, 32, 48], [0, 30], { span: 16, frames: 300 }); // [0, 0, 0, 0]: 16…31 reaches GOP 30
 */
export function gopsOf(
  starts: readonly number[],
  keyframes: ArrayLike<number>,
  chain?: { readonly span: number; readonly frames: number },
): number[] {
  const out: number[] = [];
  let k = 0;
  let prevKey = 0;
  for (let i = 0; i < starts.length; i++) {
    const s = starts[i]!;
    while (k + 1 < keyframes.length && keyframes[k + 1]! <= s) k++;
    const key = keyframes[k] ?? 0;
    const run = out[i - 1];
    const same = run !== undefined && key === prevKey;
    const reaches = run !== undefined && chain && starts[i - 1]! + chain.span > key && key - run < chain.frames;
    out.push(same || reaches ? run! : key);
    prevKey = key;
  }
  return out;
}

/** A shard: a run of objects; the shard shuffle permutes these. */
export interface PlannedShard {
  readonly objects: readonly number[];
}

/**
 * Objects per listing page: an R2 list call and a manifest page, and the dataset table's page
 * target. A shard is in the page of its first object; "shard-buffer" permutes pages.
 */
export const PAGE_OBJECTS = 1000;

/** Every clip of the dataset, before any shuffle: clip id = position in (shard, object, start) order. */
export interface ClipPlan {
  readonly objects: readonly PlannedObject[];
  readonly shards: readonly PlannedShard[];
  /** The shards of page k are [pageStarts[k], pageStarts[k + 1]); pages hold one shard at least. */
  readonly pageStarts: Int32Array;
  readonly total: number;
  /** Same plan ⇔ same fingerprint: what a resume checkpoint is checked against. */
  readonly fingerprint: string;
}

/**
 * The plan's fingerprint: the sampling, the listing (`digest`, the SetDigest of every object's
 * key and etag; computed from `objects` when not given) and the shard sizes. An etag pins an
 * object's bytes, so its frames, keyframes, size and clips, and the shards are cut from sizes
 * and listing order: the same fingerprint is the same order, whether the listing comes from a
 * table head or from every index.
 *
 * @example
 * const plan = makePlan(objects, [{ objects: [0, 1] }], options);
 */
export function makePlan(
  objects: readonly PlannedObject[],
  shards: readonly PlannedShard[],
  o: Sampling,
  digest?: string,
): ClipPlan {
  let total = 0;
  for (const obj of objects) total += obj.starts.length;
  let listed = digest;
  if (listed === undefined) {
    const d = new SetDigest();
    for (const obj of objects) d.add(obj.key, obj.etag);
    listed = d.toString();
  }
  // Another track is another set of frames.
  const salt = [`order ${ORDER_VERSION}`, o.frames, o.stride, o.hop ?? null, o.align, ...(o.track ? [o.track] : [])];
  const fingerprint = createHash("sha256")
    .update(JSON.stringify([...salt, objects.length, listed, shards.map((s) => s.objects.length)]))
    .digest("hex")
    .slice(0, 32);
  return { objects, shards, pageStarts: pageStartsOf(shards), total, fingerprint };
}

/**
 * Where each listing page's shards start: a shard is in the page of its first object (an
 * empty shard in its predecessor's). The shard sizes the fingerprint holds fix it.
 */
export function pageStartsOf(shards: readonly PlannedShard[]): Int32Array {
  const starts: number[] = [];
  let page = -1;
  shards.forEach((s, i) => {
    const first = s.objects[0];
    const p = first === undefined ? page : Math.floor(first / PAGE_OBJECTS);
    if (p !== page || i === 0) starts.push(i);
    page = Math.max(page, p);
  });
  starts.push(shards.length);
  return Int32Array.from(starts);
}

/** A clip reference: which object, which first frame. */
export interface ClipRef {
  readonly object: number;
  readonly start: number;
}
