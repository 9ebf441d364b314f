/**
 * The labeling stage of the pipeline: cached lookup, labeling after decode, and the filter.
 * `stage.hooks` plugs into `open()`'s `labels` and `filter` options.
 */
import { createHash } from "node:crypto";
import type { AnalysisOptions } from "./analysis.js";
import { stableJson } from "./builtins/define.js";
import type { LabelCache, LabelCacheKey } from "./cache/label-cache.js";
import { MemoryLabelCache } from "./cache/memory-cache.js";
import { filterPredicate, type FilterPolicy } from "./filter.js";
import { labelClip, toFrames, type ClipLabels } from "./label-clip.js";
import type { LabelClipInfo, Labeler, LabelerFactory } from "./labeler.js";
import { labelerRegistry, resolveLabelers, type LabelsSpec } from "./registry.js";

export interface LabelStageOptions {
  /** Which labelers run, with which thresholds; default `true` (every built-in). */
  readonly labels?: LabelsSpec;
  /** What reaches the consumer; default "drop" (clips that fail validation are dropped). */
  readonly filter?: FilterPolicy;
  /** Where results are kept across epochs and ranks; default in-process memory; false: none. */
  readonly cache?: LabelCache | false;
  readonly analysis?: AnalysisOptions;
  /** Whatever else changes the frames labelers see (e.g. the pipeline's size and format): part of the cache key. */
  readonly context?: string;
  /** A cache that fails is reported here and bypassed; labeling goes on. */
  readonly onCacheError?: (err: unknown) => void;
  readonly registry?: ReadonlyMap<string, LabelerFactory>;
}

/** The `labels`/`filter` hooks of `open()`, over the SDK's ClipInfo. */
export interface LabelHooks {
  labels(clip: LabelClipInfo, frames: unknown): Promise<Record<string, unknown>>;
  filter(clip: LabelClipInfo & { readonly labels: Readonly<Record<string, unknown>> }): Promise<boolean>;
}

export interface LabelStage {
  readonly labelers: readonly Labeler[];
  /** Fingerprint of labelers, thresholds, analysis settings and context. */
  readonly config: string;
  /** Cached labels of a clip, before anything is fetched or decoded; undefined on a miss. */
  lookup(info: LabelClipInfo): Promise<ClipLabels | undefined>;
  /** Labels a decoded clip (a frame list or a [T, H, W, C] tensor), from the cache when there. */
  label(info: LabelClipInfo, frames: unknown): Promise<ClipLabels>;
  /** The filter policy applied to labeled clips. */
  keep(labels: ClipLabels, info: LabelClipInfo): Promise<boolean>;
  readonly hooks: LabelHooks;
  /** Clips labeled here and clips answered from the cache. */
  readonly counts: { labeled: number; cached: number };
  /** Waits for cache writes still in flight (they never hold a clip back). */
  flush(): Promise<void>;
}

/**
 * Builds the labeling stage, validating every labeler and threshold before any I/O.
 *
 * @example
 * const stage = createLabelStage({ labels: { black: { maxRatio: 0.2 }, frozen: true }, filter: "drop" });
 * const ds = await open(url, { frames: 16, ...stage.hooks });
 */
export function createLabelStage(o: LabelStageOptions = {}): LabelStage {
  const labelers = resolveLabelers(o.labels ?? true, o.registry ?? labelerRegistry);
  const keep = filterPredicate(o.filter ?? "drop");
  const cache = o.cache === false ? undefined : (o.cache ?? new MemoryLabelCache());
  const config = createHash("sha256")
    .update(
      stableJson({
        labelers: labelers.map((l) => [l.name, l.severity, l.fingerprint]),
        analysis: o.analysis ?? {},
        context: o.context ?? "",
      }),
    )
    .digest("hex")
    .slice(0, 16);
  const counts = { labeled: 0, cached: 0 };
  const pending = new Set<Promise<void>>();
  const report = o.onCacheError ?? (() => {});

  const keyOf = (info: LabelClipInfo): LabelCacheKey | undefined =>
    info.etag === undefined
      ? undefined
      : { key: info.key, etag: info.etag, start: info.start, frames: info.frames, stride: info.stride, config };

  const lookup = async (info: LabelClipInfo): Promise<ClipLabels | undefined> => {
    const k = keyOf(info);
    if (!cache || !k) return undefined;
    try {
      return await cache.get(k);
    } catch (err) {
      report(err);
      return undefined;
    }
  };

  const label = async (info: LabelClipInfo, frames: unknown): Promise<ClipLabels> => {
    const hit = await lookup(info);
    if (hit) {
      counts.cached++;
      return hit;
    }
    const labels = await labelClip(toFrames(frames), info, labelers, o.analysis);
    counts.labeled++;
    const k = keyOf(info);
    if (cache && k) {
      // Not awaited: a remote write must not add a round trip to every clip.
      const put = cache
        .put(k, labels)
        .catch(report)
        .finally(() => pending.delete(put));
      pending.add(put);
    }
    return labels;
  };

  const stage: LabelStage = {
    labelers,
    config,
    lookup,
    label,
    keep: async (labels, info) => keep(labels, info),
    counts,
    flush: async () => {
      while (pending.size > 0) await Promise.all(pending);
    },
    hooks: {
      labels: async (clip, frames) => ({ ...(await label(clip, frames)) }),
      filter: async (clip) => keep(clip.labels as ClipLabels, clip),
    },
  };
  return stage;
}
