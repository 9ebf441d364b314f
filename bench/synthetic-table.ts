import type { TableEntryV1 } from "../common/schema/index.js";

/**
 * A table entry as open-scale seeds its objects: a small video of 24 frames with a keyframe
 * every 6 and a 16-byte ETag unique to `i`. Benches that need millions of entries make them
 * with this instead of indexing videos.
 *
 * @example
 * const e = syntheticEntry("scale/o-0000001.mp4", 1);
 */
export function syntheticEntry(key: string, i: number): TableEntryV1 {
  return {
    key,
    size: 20_000 + (i % 97),
    etag: `"${((i * 2654435761) >>> 0).toString(16).padStart(8, "0")}${i.toString(16).padStart(24, "0")}"`,
    kind: "video",
    frames: 24,
    keyframes: [0, 6, 12, 18],
    codec: "h264",
    width: 64,
    height: 48,
  };
}
