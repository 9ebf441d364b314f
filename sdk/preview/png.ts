/** PNG files of RgbImages (fast-png's encoder). */
import { encode } from "fast-png";
import type { RgbImage } from "./rgb-image.js";

/**
 * @example
 * await writeFile("sheet.png", encodePng(image));
 */
export function encodePng(image: RgbImage): Uint8Array {
  return encode({ width: image.width, height: image.height, data: image.data, channels: 3, depth: 8 });
}

/**
 * The image as a `data:image/png;base64,…` URI, to inline in a self-contained HTML page.
 *
 * @example
 * `<img src="${pngDataUri(thumb)}">`
 */
export function pngDataUri(image: RgbImage): string {
  return `data:image/png;base64,${Buffer.from(encodePng(image)).toString("base64")}`;
}
