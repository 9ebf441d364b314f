/** A clip in three small pictures side by side: its first, middle and last frame. */
import { RgbImage, type Rgb } from "./rgb-image.js";
import { frameToRgb, type PictureFrame } from "./to-rgb.js";

const GAP = 2;
const BACKGROUND: Rgb = [29, 35, 48];

/** Indices of the first, middle and last of `count` frames, without repeats. */
export function firstMiddleLast(count: number): number[] {
  return [...new Set([0, Math.floor((count - 1) / 2), count - 1])].filter((i) => i >= 0);
}

/**
 * The first, middle and last frame, each shrunk by the smallest whole factor that makes it at
 * most `maxWidth` pixels wide; undefined for a clip without frames.
 *
 * @example
 * const strip = thumbnailStrip(decoded.frames, 96);
 */
export function thumbnailStrip(frames: readonly PictureFrame[], maxWidth = 96): RgbImage | undefined {
  const pictures = firstMiddleLast(frames.length).map((i) => {
    const f = frames[i]!;
    return frameToRgb(f, Math.max(1, Math.ceil(f.width / maxWidth)));
  });
  if (pictures.length === 0) return undefined;
  const width = pictures.reduce((w, p) => w + p.width, 0) + GAP * (pictures.length - 1);
  const image = new RgbImage(width, Math.max(...pictures.map((p) => p.height)), BACKGROUND);
  let x = 0;
  for (const p of pictures) {
    image.paste(p.data, p.width, p.height, x, 0);
    x += p.width + GAP;
  }
  return image;
}
