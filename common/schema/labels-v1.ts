import { z } from "zod";

/** A value a labeler reports: JSON-safe scalars or a list of numbers (e.g. cut positions). */
export const LabelValueV1 = z.union([z.number(), z.boolean(), z.string(), z.array(z.number())]);

/** What one labeler said about one clip. */
export const LabelResultV1 = z.object({
  valid: z.boolean(),
  flags: z.array(z.string()),
  values: z.record(z.string(), LabelValueV1),
});
export type LabelResultV1 = z.infer<typeof LabelResultV1>;

/** Every labeler's result for one clip, merged: what ClipInfo.labels holds. */
export const ClipLabelsV1 = z.object({
  /** False when any labeler of severity "fail" flagged the clip. */
  valid: z.boolean(),
  /** The union of every labeler's flags. */
  flags: z.array(z.string()),
  results: z.record(z.string(), LabelResultV1),
});
export type ClipLabelsV1 = z.infer<typeof ClipLabelsV1>;

/**
 * A label sidecar as stored under `_ec/labels/` at the edge: one clip of one object version,
 * labeled under one labeler configuration.
 */
export const LabelSidecarV1 = z.object({
  version: z.literal(1),
  key: z.string(),
  etag: z.string(),
  start: z.number().int().nonnegative(),
  frames: z.number().int().positive(),
  stride: z.number().int().positive(),
  /** Fingerprint of the labelers and their settings. */
  config: z.string(),
  labels: ClipLabelsV1,
});
export type LabelSidecarV1 = z.infer<typeof LabelSidecarV1>;

/**
 * The three path segments of a sidecar, `{config}/{etag}/{start}-{frames}-{stride}`: sidecars
 * are keyed by content (etag), so copies of one object share labels and a rewritten object is
 * labeled afresh. The etag is given bare (no quotes, no W/).
 */
export const LabelSidecarPathV1 = z.object({
  config: z.string().regex(/^[0-9a-f]{8,64}$/),
  etag: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/),
  clip: z.string().regex(/^\d{1,12}-\d{1,9}-\d{1,9}$/),
});
export type LabelSidecarPathV1 = z.infer<typeof LabelSidecarPathV1>;

/** Where label sidecars live in the bucket, under the reserved prefix. */
export const LABEL_SIDECAR_PREFIX = "_ec/labels/";

/**
 * An HTTP etag as a sidecar path segment: quotes and the weak marker stripped.
 *
 * @example
 * bareEtag('"9e1f"'); // "9e1f"
 */
export function bareEtag(etag: string): string {
  return etag.replace(/^W\//, "").replace(/^"|"$/g, "");
}
