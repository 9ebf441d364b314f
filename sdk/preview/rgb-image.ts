/**
 * A small RGB24 canvas for contact sheets and thumbnails: fill, paste a frame, write a line of
 * text in a bitmap font. Not thread-safe; one per picture.
 */
import pixelFonts from "js-pixel-fonts";

export type Rgb = readonly [number, number, number];

const FONT = pixelFonts.fonts.sevenPlus;
/** Height in pixels of one line of text (the font's line height). */
export const TEXT_HEIGHT = FONT.lineHeight;

/** A packed RGB24 picture: `data[(y * width + x) * 3 + c]`. */
export class RgbImage {
  readonly data: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    background: Rgb = [0, 0, 0],
  ) {
    this.data = new Uint8Array(width * height * 3);
    for (let i = 0; i < this.data.length; i += 3) this.data.set(background, i);
  }

  /** Copies a packed RGB24 picture of `w` × `h` with its top-left corner at (x, y); what falls outside is cut. */
  paste(rgb: Uint8Array, w: number, h: number, x: number, y: number): void {
    const cols = Math.min(w, this.width - x);
    for (let row = 0; row < h && y + row < this.height; row++) {
      const from = row * w * 3;
      this.data.set(rgb.subarray(from, from + cols * 3), ((y + row) * this.width + x) * 3);
    }
  }

  /** Writes `text` at (x, y) (top-left), cut at `maxWidth` pixels; returns the width drawn. */
  text(text: string, x: number, y: number, color: Rgb, maxWidth = this.width - x): number {
    const pixels = textPixels(fitText(text, maxWidth));
    pixels.forEach((row, dy) =>
      row.forEach((on, dx) => {
        if (on && x + dx < this.width && y + dy < this.height)
          this.data.set(color, ((y + dy) * this.width + x + dx) * 3);
      }),
    );
    return pixels[0]?.length ?? 0;
  }
}

/** The font's space is 3 px with no spacing around it, too tight between words: each counts twice. */
function textPixels(text: string): number[][] {
  return text.length === 0 ? [] : pixelFonts.renderPixels(text.replace(/[^\x20-\x7e]/g, "?").replace(/ /g, "  "), FONT);
}

/** Width in pixels of `text` in the bitmap font. */
export function textWidth(text: string): number {
  return textPixels(text)[0]?.length ?? 0;
}

/** `text`, shortened with a trailing "~" until it fits `maxWidth` pixels. */
function fitText(text: string, maxWidth: number): string {
  if (textWidth(text) <= maxWidth) return text;
  let n = text.length;
  while (n > 0 && textWidth(`${text.slice(0, n)}~`) > maxWidth) n--;
  return n > 0 ? `${text.slice(0, n)}~` : "";
}
