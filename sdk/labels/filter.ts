/** Which labeled clips reach the consumer. */
import { describeReceived } from "../../common/errors.js";
import { LabelOptionError } from "./errors.js";
import type { ClipLabels } from "./label-clip.js";
import type { LabelClipInfo } from "./labeler.js";

/**
 * - `"drop"` (default): clips that fail validation never reach the consumer;
 * - `"tag"`: every clip goes through with its labels;
 * - a function of the labels and the clip: keeps the clip when it returns true.
 */
export type FilterPolicy = "drop" | "tag" | ((labels: ClipLabels, info: LabelClipInfo) => boolean | Promise<boolean>);

/**
 * Turns a policy into a predicate over labeled clips.
 *
 * @example
 * const keep = filterPredicate("drop");
 * await keep(labels, info); // false when labels.valid is false
 */
export function filterPredicate(
  policy: FilterPolicy = "drop",
): (labels: ClipLabels, info: LabelClipInfo) => boolean | Promise<boolean> {
  if (policy === "drop") return (labels) => labels.valid;
  if (policy === "tag") return () => true;
  if (typeof policy === "function") return policy;
  throw new LabelOptionError(
    `Expected "drop", "tag" or a function for filter but received ${describeReceived(policy)}`,
  );
}
