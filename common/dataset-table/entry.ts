import { isShown } from "../media-index/edit-window.js";
import { frameOrder } from "../media-index/frame-order.js";
import type { IndexV1, TableEntryV1 } from "../schema/index.js";

/**
 * The table entry of an object from its full index: the facts the planner reads (sample
 * count, keyframes in presentation order), so planning from a table or from indexes is one
 * code path. `keyframes` skips recomputing the presentation order where it is at hand.
 *
 * @example
 * const entry = tableEntry(decodeIndex(bytes));
 */
export function tableEntry(index: IndexV1, keyframes?: readonly number[]): TableEntryV1 {
  const base: TableEntryV1 = { key: index.key, size: index.size, etag: index.etag, kind: index.kind };
  if (index.kind === "error")
    return { ...base, error: index.error ?? { code: "ERR_INDEX_CORRUPT", message: "corrupt object" } };
  if (index.video) {
    const v = index.video;
    // Frames as ffmpeg outputs them: the samples an edit list shows (frame 0 the first after the cut).
    const order = keyframes ? undefined : frameOrder(v.samples, v.edit);
    const frames = order ? order.decodeOf.length : v.samples.pts.filter((p) => isShown(v.edit, p)).length;
    return {
      ...base,
      frames,
      keyframes: [...(keyframes ?? order!.keyframes)],
      codec: v.codec,
      width: v.width,
      height: v.height,
    };
  }
  if (index.image) return { ...base, width: index.image.width, height: index.image.height };
  if (index.array) return { ...base, frames: 1 };
  return base;
}

/**
 * Orders keys as R2 lists them: by UTF-8 bytes, which is code-point order (JavaScript's `<`
 * compares UTF-16 units and differs above U+FFFF).
 *
 * @example
 * ["b", "a"].sort(compareKeys); // ["a", "b"]
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/**
 * The dataset root a key belongs to (its first path segment), whose table lists it; a key
 * with no "/" is in no dataset (a dataset URL names a prefix).
 *
 * @example
 * tableRoot("gameplay/day1/a.mp4"); // "gameplay"
 */
export function tableRoot(key: string): string | undefined {
  const slash = key.indexOf("/");
  return slash > 0 ? key.slice(0, slash) : undefined;
}
