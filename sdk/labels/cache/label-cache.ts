/** Where labels of a clip are kept between epochs and across ranks. */
import { bareEtag, LabelSidecarPathV1 } from "../../../common/schema/labels-v1.js";
import type { ClipLabels } from "../label-clip.js";

/** One clip of one object version under one labeler configuration. */
export interface LabelCacheKey {
  readonly key: string;
  readonly etag: string;
  readonly start: number;
  readonly frames: number;
  readonly stride: number;
  /** Fingerprint of the labelers, their thresholds and the frame geometry. */
  readonly config: string;
}

/** get → undefined on a miss; a put may be lost (the clip is then labeled again), never torn. */
export interface LabelCache {
  get(k: LabelCacheKey): Promise<ClipLabels | undefined>;
  put(k: LabelCacheKey, labels: ClipLabels): Promise<void>;
}

/**
 * The etag as a path segment: quotes and weak markers stripped; undefined when unusable.
 *
 * @example
 * etagSegment('W/"9e1f"'); // "9e1f"
 */
export function etagSegment(etag: string): string | undefined {
  const bare = bareEtag(etag);
  return LabelSidecarPathV1.shape.etag.safeParse(bare).success ? bare : undefined;
}

/**
 * The sidecar's path below `_ec/labels/`: keyed by content (etag), not by name, so copies of
 * one object share their labels and a rewritten object is labeled afresh.
 *
 * @example
 * sidecarPath({ key: "a.mp4", etag: '"9e1f"', start: 0, frames: 16, stride: 1, config: "0123abcd" }); // "0123abcd/9e1f/0-16-1"
 */
export function sidecarPath(k: LabelCacheKey): string | undefined {
  const etag = etagSegment(k.etag);
  const path = { config: k.config, etag: etag ?? "", clip: `${k.start}-${k.frames}-${k.stride}` };
  return etag && LabelSidecarPathV1.safeParse(path).success ? `${path.config}/${path.etag}/${path.clip}` : undefined;
}
