/** Decoded frames as packed RGB24, for pictures of them (contact sheets, report thumbnails). */
import { describeReceived } from "../../common/errors.js";
import { SdkError } from "../errors.js";
import { arrayToRgb } from "./array-to-rgb.js";

/** A decoded host frame: rgb24, or the decoder's own planes packed one after another. */
export interface PictureFrame {
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly format: string;
}

const LUMA_ONLY = new Set(["gray", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p", "nv12", "nv21"]);
/** 16-bit little-endian luma-first formats (10- and 12-bit video): the right shift to 8 bits. */
const WIDE_SHIFT: Readonly<Record<string, number>> = {
  yuv420p10le: 2,
  yuv422p10le: 2,
  yuv444p10le: 2,
  gray10le: 2,
  yuv420p12le: 4,
  yuv422p12le: 4,
  yuv444p12le: 4,
  p010le: 8,
  p016le: 8,
};
const clamp = (v: number) => Math.min(Math.max(v, 0), 255);

/**
 * The frame as packed RGB24, `scale`× smaller by nearest sampling (1 keeps every pixel):
 * rgb24 as is, yuv420p/yuvj420p converted with BT.601 (limited or full range), other 8-bit
 * luma-first formats (and 10- or 12-bit ones, brought to 8 bits) as gray from their luma plane, `.npy` arrays as `arrayToRgb` shows them.
 *
 * @example
 * const rgb = frameToRgb(batch.decoded[0].frames[0], 2); // half width and height
 */
export function frameToRgb(f: PictureFrame, scale = 1): { data: Uint8Array; width: number; height: number } {
  if (f.format.startsWith("npy:")) return arrayToRgb(f, scale);
  const wide = WIDE_SHIFT[f.format];
  const width = Math.max(1, Math.floor(f.width / scale));
  const height = Math.max(1, Math.floor(f.height / scale));
  const out = new Uint8Array(width * height * 3);
  const yuv = f.format === "yuv420p" || f.format === "yuvj420p";
  if (f.format !== "rgb24" && !yuv && !LUMA_ONLY.has(f.format) && wide === undefined) {
    throw new SdkError(
      "ERR_PREVIEW_FORMAT",
      `Expected frames in rgb24 or a YUV format for a picture but received ${describeReceived(f.format)}`,
    );
  }
  const full = f.format === "yuvj420p";
  const cw = Math.ceil(f.width / 2);
  const uBase = f.width * f.height;
  const vBase = uBase + cw * Math.ceil(f.height / 2);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(f.height - 1, Math.floor(y * scale));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(f.width - 1, Math.floor(x * scale));
      const o = (y * width + x) * 3;
      if (f.format === "rgb24") {
        const i = (sy * f.width + sx) * 3;
        out[o] = f.data[i]!;
        out[o + 1] = f.data[i + 1]!;
        out[o + 2] = f.data[i + 2]!;
        continue;
      }
      if (wide !== undefined) {
        const i = (sy * f.width + sx) * 2;
        out.fill(Math.min(255, (f.data[i]! | (f.data[i + 1]! << 8)) >> wide), o, o + 3);
        continue;
      }
      const luma = f.data[sy * f.width + sx]!;
      if (!yuv) {
        out.fill(luma, o, o + 3);
        continue;
      }
      const c = (sy >> 1) * cw + (sx >> 1);
      const u = f.data[uBase + c]! - 128;
      const v = f.data[vBase + c]! - 128;
      const l = full ? luma : (luma - 16) * 1.164;
      const k = full ? 1 : 1.138;
      out[o] = clamp(Math.round(l + 1.402 * k * v));
      out[o + 1] = clamp(Math.round(l - 0.344 * k * u - 0.714 * k * v));
      out[o + 2] = clamp(Math.round(l + 1.772 * k * u));
    }
  }
  return { data: out, width, height };
}
