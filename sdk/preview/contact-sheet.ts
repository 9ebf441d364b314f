/**
 * A contact sheet of a batch: one row per clip, its frames left to right, under a line naming
 * the object key, the clip's start frame and its labels. Tiles keep the delivered frames'
 * pixels (frames larger than MAX_TILE are shown smaller by a whole factor).
 */
import type { ClipInfo } from "../clip-info.js";
import { encodePng } from "./png.js";
import { RgbImage, TEXT_HEIGHT, type Rgb } from "./rgb-image.js";
import { frameToRgb, type PictureFrame } from "./to-rgb.js";

/** Largest side of a tile in pixels; larger frames are shrunk by the smallest whole factor that fits. */
export const MAX_TILE = 256;
/** Frames shown per clip at most, evenly spaced over the clip. */
export const MAX_FRAMES_PER_ROW = 16;
const PAD = 4;
const GAP = 2;
const BAND = TEXT_HEIGHT + 4;
const MIN_WIDTH = 320;
const BACKGROUND: Rgb = [29, 35, 48];
const INK: Rgb = [235, 238, 245];

/** Where one frame of one clip sits on the sheet. */
export interface SheetTile {
  readonly clip: number;
  /** Index of the frame within the clip. */
  readonly frame: number;
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

export interface ContactSheet {
  readonly image: RgbImage;
  readonly tiles: readonly SheetTile[];
  /** The sheet as a PNG file. */
  png(): Uint8Array;
}

/** The clip's labels in a few words: the built-in labelers' flags, or a custom hook's fields. */
export function labelsText(labels: Readonly<Record<string, unknown>>): string {
  const flags = labels.flags;
  if (Array.isArray(flags)) return flags.length === 0 ? "no flags" : `flags: ${flags.join(", ")}`;
  const entries = Object.entries(labels).map(
    ([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : String(v)}`,
  );
  return entries.length === 0 ? "no labels" : entries.join(" ");
}

function picked(count: number): number[] {
  if (count <= MAX_FRAMES_PER_ROW) return Array.from({ length: count }, (_, i) => i);
  return Array.from({ length: MAX_FRAMES_PER_ROW }, (_, i) => Math.round((i * (count - 1)) / (MAX_FRAMES_PER_ROW - 1)));
}

/**
 * Lays out the clips of a batch (`batch.clips` with `batch.decoded`) as one picture.
 *
 * @example
 * for await (const batch of ds) {
 *   await writeFile(".ec/first-batch.png", contactSheet(batch.clips, batch.decoded).png());
 *   break;
 * }
 */
export function contactSheet(
  clips: readonly ClipInfo[],
  decoded: readonly { readonly frames: readonly PictureFrame[] }[],
): ContactSheet {
  const rows = clips.map((info, i) => {
    const frames = decoded[i]?.frames ?? [];
    const first = frames[0];
    const scale = first ? Math.max(1, Math.ceil(Math.max(first.width, first.height) / MAX_TILE)) : 1;
    const pictures = picked(frames.length).map((t) => ({ t, ...frameToRgb(frames[t]!, scale) }));
    const caption = `${info.key} | frame ${info.start}${info.stride > 1 ? `, stride ${info.stride}` : ""} | ${labelsText(info.labels)}`;
    return { pictures, caption, height: Math.max(0, ...pictures.map((p) => p.height)) };
  });
  const rowWidth = (r: (typeof rows)[number]) =>
    r.pictures.reduce((w, p) => w + p.width, 0) + GAP * Math.max(0, r.pictures.length - 1);
  const width = Math.max(MIN_WIDTH, ...rows.map((r) => rowWidth(r) + 2 * PAD));
  const height = PAD + rows.reduce((h, r) => h + BAND + r.height + PAD, 0);
  const image = new RgbImage(width, height, BACKGROUND);
  const tiles: SheetTile[] = [];
  let y = PAD;
  rows.forEach((row, clip) => {
    image.text(row.caption, PAD, y + 1, INK, width - 2 * PAD);
    let x = PAD;
    for (const p of row.pictures) {
      image.paste(p.data, p.width, p.height, x, y + BAND);
      tiles.push({ clip, frame: p.t, x, y: y + BAND, width: p.width, height: p.height });
      x += p.width + GAP;
    }
    y += BAND + row.height + PAD;
  });
  return { image, tiles, png: () => encodePng(image) };
}
