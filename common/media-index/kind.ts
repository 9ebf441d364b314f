import type { MediaKind } from "../schema/index.js";

const byExtension = new Map<string, MediaKind>([
  ...["mp4", "m4v", "mov", "3gp", "mkv", "webm", "ts", "m2ts", "mts"].map((e) => [e, "video"] as const),
  ...["jpg", "jpeg", "png", "webp"].map((e) => [e, "image"] as const),
  ["npy", "array"],
]);

/**
 * The kind an object is expected to be, from its key's extension alone (the manifest uses
 * this; the index says for sure).
 *
 * @example
 * guessKind("clips/a.MP4"); // "video"
 */
export function guessKind(key: string): MediaKind {
  const name = key.slice(key.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  if (dot <= 0) return "other";
  return byExtension.get(name.slice(dot + 1).toLowerCase()) ?? "other";
}
