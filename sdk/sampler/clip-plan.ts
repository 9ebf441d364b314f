import { createHash } from "node:crypto";
import type { ResolvedOptions } from "../options.js";
import { clipSpan } from "../options.js";

type Sampling = Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align"> & { readonly track?: number };

/**
 * Where clips start in one object (presentation indices). "keyframe": on keyframes at least
 * `hop` apart, so no frame before the clip is decoded; "exact": every `hop` frames from 0.
 *
 * @example
 * clipStarts(30, [0, 12, 24], { frames: 4, stride: 1, align: "keyframe" }); // [0, 12, 24]
 */
export function clipStarts(frameCount: number, keyframes: readonly number[], o: Sampling): number[] {
  const span = clipSpan(o);
  const hop = o.hop ?? span;
  const starts: number[] = [];
  if (o.align === "exact") {
    for (let s = 0; s + span <= frameCount; s += hop) starts.push(s);
    return starts;
  }
  let next = 0;
  for (const k of keyframes) {
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
 *
 * @example
 * gopsOf([0, 16, 32, 300], [0, 300]); // [0, 0, 0, 300]
 */
export function gopsOf(starts: readonly number[], keyframes: readonly number[]): number[] {
  const out: number[] = [];
  let k = 0;
  for (const s of starts) {
    while (k + 1 < keyframes.length && keyframes[k + 1]! <= s) k++;
    out.push(keyframes[k] ?? 0);
  }
  return out;
}

/** A shard: a run of objects; the shard shuffle permutes these. */
export interface PlannedShard {
  readonly objects: readonly number[];
}

/** Every clip of the dataset, before any shuffle: clip id = position in (shard, object, start) order. */
export interface ClipPlan {
  readonly objects: readonly PlannedObject[];
  readonly shards: readonly PlannedShard[];
  readonly total: number;
  /** Same plan ⇔ same fingerprint: what a resume checkpoint is checked against. */
  readonly fingerprint: string;
}

/**
 * @example
 * const plan = makePlan(objects, [{ objects: [0, 1] }], options);
 */
export function makePlan(objects: readonly PlannedObject[], shards: readonly PlannedShard[], o: Sampling): ClipPlan {
  // "order 2": shard-buffer deals GOP runs, so a checkpoint of the earlier order is refused, not misread.
  // Another track is another set of frames.
  const h = createHash("sha256").update(
    JSON.stringify(["order 2", o.frames, o.stride, o.hop ?? null, o.align, ...(o.track ? [o.track] : [])]),
  );
  let total = 0;
  // Hashed in chunks (the same bytes as one update per object): a hash call per object was a
  // term of open() that grew with the dataset.
  let chunk = "";
  for (const obj of objects) {
    chunk += `\n${obj.key}\u0000${obj.etag}\u0000${obj.starts.length}`;
    total += obj.starts.length;
    if (chunk.length > 1 << 16) {
      h.update(chunk);
      chunk = "";
    }
  }
  h.update(chunk);
  h.update(JSON.stringify(shards.map((s) => s.objects)));
  return { objects, shards, total, fingerprint: h.digest("hex").slice(0, 32) };
}

/** A clip reference: which object, which first frame. */
export interface ClipRef {
  readonly object: number;
  readonly start: number;
}
