/**
 * `open()`'s `labels` and `filter` options as the pipeline calls them: a labels spec becomes
 * the labeling stage's hooks; "drop"/"tag" become a filter over what the labels say.
 */
import type { FilterPolicy } from "./filter.js";
import type { ClipLabels } from "./label-clip.js";
import type { LabelClipInfo } from "./labeler.js";
import type { LabelsSpec } from "./registry.js";
import { createLabelStage } from "./stage.js";

type Hook<I> = (clip: I, frames: unknown) => Record<string, unknown> | Promise<Record<string, unknown>>;
type Filter<I> = (clip: I) => boolean | Promise<boolean>;

/**
 * Normalizes the two options. With a spec, `filter` defaults to "drop" (clips that fail
 * validation never reach the consumer); with a hook of one's own, to keeping every clip.
 *
 * @example
 * const { labels, filter } = labelOptionHooks(true, undefined); // every built-in, drop invalid clips
 */
export function labelOptionHooks<I extends LabelClipInfo & { readonly labels: Readonly<Record<string, unknown>> }>(
  labels: Hook<I> | LabelsSpec | undefined,
  filter: Filter<I> | "drop" | "tag" | undefined,
): { labels?: Hook<I>; filter?: Filter<I> } {
  const custom = typeof filter === "function" ? filter : undefined;
  if (labels === undefined || labels === false || typeof labels === "function") {
    const drop: Filter<I> = (clip) => (clip.labels as Partial<ClipLabels>).valid !== false;
    return {
      ...(typeof labels === "function" ? { labels } : {}),
      ...(custom ? { filter: custom } : filter === "drop" ? { filter: drop } : {}),
    };
  }
  const stage = createLabelStage({ labels, filter: (filter === "tag" ? "tag" : "drop") satisfies FilterPolicy });
  return { labels: stage.hooks.labels as Hook<I>, filter: custom ?? (stage.hooks.filter as Filter<I>) };
}
