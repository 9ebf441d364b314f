/**
 * Thumbnails of flagged clips for the HTML report, kept while the stream runs: a few clips per
 * object (invalid ones first), each as one small PNG of its first, middle and last frame.
 */
import { EcError } from "../../../common/errors.js";
import { pngDataUri, thumbnailStrip, type PictureFrame } from "../../preview/index.js";

/** One flagged clip as the report shows it. */
export interface ClipThumbnail {
  readonly start: number;
  readonly flags: readonly string[];
  readonly valid: boolean;
  /** A data: URI of the PNG strip; absent when the frames could not be pictured. */
  readonly src?: string;
  /** Why there is no picture (e.g. a pixel format a thumbnail cannot show). */
  readonly note?: string;
}

/**
 * @example
 * const thumbs = new ThumbnailCollector();
 * thumbs.add(clip.key, clip.start, labels, decoded.frames);
 * renderHtml(summary, { dataset, thumbnails: thumbs.byObject() });
 */
export class ThumbnailCollector {
  readonly #kept = new Map<string, { invalid: ClipThumbnail[]; other: ClipThumbnail[] }>();

  constructor(
    readonly perObject = 4,
    readonly maxWidth = 96,
  ) {}

  /** Keeps a picture of the clip if it is flagged and its object has room. */
  add(
    key: string,
    start: number,
    labels: { readonly valid: boolean; readonly flags: readonly string[] },
    frames: readonly PictureFrame[],
  ): void {
    if (labels.flags.length === 0) return;
    const kept = this.#kept.get(key) ?? { invalid: [], other: [] };
    this.#kept.set(key, kept);
    const list = labels.valid ? kept.other : kept.invalid;
    if (list.length >= this.perObject) return;
    list.push({ start, flags: [...labels.flags], valid: labels.valid, ...picture(frames, this.maxWidth) });
  }

  /** Per object key, its kept clips: invalid ones first, then other flagged ones. */
  byObject(): Map<string, readonly ClipThumbnail[]> {
    return new Map([...this.#kept].map(([key, k]) => [key, [...k.invalid, ...k.other].slice(0, this.perObject)]));
  }
}

function picture(frames: readonly PictureFrame[], maxWidth: number): { src: string } | { note: string } {
  try {
    const strip = thumbnailStrip(frames, maxWidth);
    return strip ? { src: pngDataUri(strip) } : { note: "no frames" };
  } catch (err) {
    if (err instanceof EcError) return { note: err.message };
    throw err;
  }
}
