/** Pictures of what the stream delivers: contact sheets of a batch, thumbnails of clips, PNG output. */
export {
  contactSheet,
  labelsText,
  MAX_TILE,
  MAX_FRAMES_PER_ROW,
  type ContactSheet,
  type SheetTile,
} from "./contact-sheet.js";
export { frameToRgb, type PictureFrame } from "./to-rgb.js";
export { arrayToRgb } from "./array-to-rgb.js";
export { RgbImage, TEXT_HEIGHT, textWidth, type Rgb } from "./rgb-image.js";
export { encodePng, pngDataUri } from "./png.js";
export { thumbnailStrip, firstMiddleLast } from "./thumbnail-strip.js";
