/**
 * Frames as the labelers read them: whatever the decoder or the pipeline hands over, viewed
 * (never copied) and reduced to a subsampled 8-bit luma grid, the one thing every built-in reads.
 */
import { describeReceived } from "../../common/errors.js";
import { LabelFrameError } from "./errors.js";

/**
 * - `gray` and the 8-bit YUV formats (`yuv420p`, `yuvj420p`, `yuv422p`, `yuv444p`, `nv12`, ...):
 *   the first plane is luma, read as is (the cheap case: no conversion).
 * - 16-bit little-endian luma-first formats (`yuv420p10le`, `p010le`, `p016le`, ...): read as
 *   bytes (`stride` in bytes) and scaled to 8 bits.
 * - `rgb24`: interleaved 8-bit RGB.
 * - `grayf32`: float luma in [0, 1]; `rgbf32`: interleaved float RGB in [0, 1];
 *   `rgbf32p`: planar float RGB (3 × H × W) in [0, 1].
 */
export type PixelFormat = LumaFirstFormat | WideLumaFormat | "rgb24" | "grayf32" | "rgbf32" | "rgbf32p";

/** Right shift that brings each 16-bit sample to 8 bits: 10-bit LSB-aligned → 2; MSB-aligned → 8. */
const WIDE_SHIFT = {
  yuv420p10le: 2,
  yuv422p10le: 2,
  yuv444p10le: 2,
  gray10le: 2,
  yuv420p12le: 4,
  p010le: 8,
  p016le: 8,
} as const;
type WideLumaFormat = keyof typeof WIDE_SHIFT;

const LUMA_FIRST = [
  "gray",
  "yuv420p",
  "yuvj420p",
  "yuv422p",
  "yuvj422p",
  "yuv444p",
  "yuvj444p",
  "nv12",
  "nv21",
] as const;
type LumaFirstFormat = (typeof LUMA_FIRST)[number];

export interface VideoFrame {
  readonly format: PixelFormat;
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array | Float32Array;
  /** Elements between the starts of two rows of the first plane; default width × channels. */
  readonly stride?: number;
  /** The decoder flagged the frame corrupt or concealed errors in it. */
  readonly corrupt?: boolean;
}

/**
 * A frame that lives on the GPU (a cuda decoder's DeviceFrame): labelers see its size and
 * format; the built-in analysis runs on its device (see device-analysis.ts).
 */
export interface GpuFrame {
  readonly kind: "device";
  readonly format: string;
  readonly width: number;
  readonly height: number;
  readonly corrupt?: boolean;
}

/** What a labeler receives: host frames (with their pixels) or, on a cuda pipeline, device frames. */
export type LabelFrame = VideoFrame | GpuFrame;

/** A CPU tensor of one clip as the SDK batches it: shape [T, H, W, C], channels last. */
export interface ClipTensor {
  readonly data: Uint8Array | Float32Array;
  readonly shape: readonly number[];
}

const CHANNELS: Record<PixelFormat, number> = {
  ...(Object.fromEntries(LUMA_FIRST.map((f) => [f, 1])) as Record<LumaFirstFormat, 1>),
  ...(Object.fromEntries(Object.keys(WIDE_SHIFT).map((f) => [f, 2])) as Record<WideLumaFormat, 2>),
  rgb24: 3,
  grayf32: 1,
  rgbf32: 3,
  rgbf32p: 1,
};

/**
 * Views a [T, H, W, C] clip tensor (C = 1 or 3; uint8 or float32 in [0, 1]) as frames, without copying.
 *
 * @example
 * const frames = framesFromTensor({ data: new Uint8Array(16 * 224 * 224 * 3), shape: [16, 224, 224, 3] });
 */
export function framesFromTensor(t: ClipTensor): VideoFrame[] {
  const [count, height, width, channels] = t.shape;
  if (t.shape.length !== 4 || !count || !height || !width || (channels !== 1 && channels !== 3)) {
    throw new LabelFrameError(`Expected a clip tensor of shape [T, H, W, 1 or 3] but received [${t.shape.join(", ")}]`);
  }
  const frameSize = height * width * channels;
  if (t.data.length < count * frameSize) {
    throw new LabelFrameError(
      `Expected at least ${count * frameSize} elements for shape [${t.shape.join(", ")}] but received ${t.data.length}`,
    );
  }
  const float = t.data instanceof Float32Array;
  const format: PixelFormat = channels === 1 ? (float ? "grayf32" : "gray") : float ? "rgbf32" : "rgb24";
  const frames: VideoFrame[] = [];
  for (let i = 0; i < count; i++) {
    const data = t.data.subarray(i * frameSize, (i + 1) * frameSize);
    frames.push({ format, width, height, data });
  }
  return frames;
}

/** A subsampled luma image: `width` × `height` samples, 0–255, taken every `step` pixels. */
export interface LumaGrid {
  readonly width: number;
  readonly height: number;
  readonly step: number;
  readonly data: Uint8Array;
}

/**
 * The sampling step (same in both directions) that keeps a width × height frame near
 * `samples` grid samples; 1 for frames already that small.
 *
 * @example
 * gridStep(1280, 720, 12_288); // 9: a 143 × 80 grid
 */
export function gridStep(width: number, height: number, samples: number): number {
  return Math.max(1, Math.round(Math.sqrt((width * height) / samples)));
}

function check(frame: VideoFrame): number {
  const { width, height, format, data } = frame;
  if (!Number.isInteger(width) || width <= 0 || !Number.isInteger(height) || height <= 0) {
    throw new LabelFrameError(
      `Expected a frame with positive integer width and height but received ${describeReceived(width)}×${describeReceived(height)}`,
    );
  }
  if (!Object.hasOwn(CHANNELS, format)) {
    throw new LabelFrameError(
      `Expected a frame format of ${Object.keys(CHANNELS).join(", ")} but received ${describeReceived(format)}`,
    );
  }
  const float = format === "grayf32" || format === "rgbf32" || format === "rgbf32p";
  if (float !== data instanceof Float32Array) {
    throw new LabelFrameError(
      `Expected ${float ? "a Float32Array" : "a Uint8Array"} for a ${format} frame but received ${data.constructor.name}`,
    );
  }
  const stride = format === "rgbf32p" ? width : (frame.stride ?? width * CHANNELS[format]);
  if (stride < width * CHANNELS[format]) {
    throw new LabelFrameError(
      `Expected a stride of at least ${width * CHANNELS[format]} for a ${width}-wide ${format} frame but received ${stride}`,
    );
  }
  const need = format === "rgbf32p" ? 3 * width * height : stride * (height - 1) + width * CHANNELS[format];
  if (data.length < need) {
    throw new LabelFrameError(
      `Expected at least ${need} elements for a ${width}×${height} ${format} frame but received ${data.length}`,
    );
  }
  return stride;
}

/**
 * Reads the frame's luma every `step` pixels into `out` (allocated when absent or too small).
 * YUV formats read their luma plane as is; RGB uses BT.601 weights.
 *
 * @example
 * const grid = lumaGrid({ format: "gray", width: 4, height: 2, data: new Uint8Array(8) }, 2);
 */
export function lumaGrid(frame: VideoFrame, step: number, out?: Uint8Array): LumaGrid {
  const stride = check(frame);
  const { width, height, format } = frame;
  const gw = Math.ceil(width / step);
  const gh = Math.ceil(height / step);
  const grid = out && out.length >= gw * gh ? out.subarray(0, gw * gh) : new Uint8Array(gw * gh);
  let o = 0;
  if (CHANNELS[format] === 1 && frame.data instanceof Uint8Array) {
    const d = frame.data as Uint8Array;
    for (let y = 0; y < height; y += step) {
      const row = y * stride;
      for (let x = 0; x < width; x += step) grid[o++] = d[row + x]!;
    }
  } else if (CHANNELS[format] === 2) {
    const d = frame.data as Uint8Array;
    const shift = WIDE_SHIFT[format as WideLumaFormat];
    for (let y = 0; y < height; y += step) {
      const end = y * stride + 2 * width;
      for (let i = y * stride; i < end; i += 2 * step) grid[o++] = Math.min(255, (d[i]! | (d[i + 1]! << 8)) >> shift);
    }
  } else if (format === "rgb24") {
    const d = frame.data as Uint8Array;
    const dx = 3 * step;
    for (let y = 0; y < height; y += step) {
      const end = y * stride + 3 * width;
      for (let i = y * stride; i < end; i += dx) grid[o++] = (77 * d[i]! + 150 * d[i + 1]! + 29 * d[i + 2]! + 128) >> 8;
    }
  } else if (format === "rgbf32") {
    const d = frame.data as Float32Array;
    const dx = 3 * step;
    for (let y = 0; y < height; y += step) {
      const end = y * stride + 3 * width;
      for (let i = y * stride; i < end; i += dx)
        grid[o++] = clamp255(255 * (0.299 * d[i]! + 0.587 * d[i + 1]! + 0.114 * d[i + 2]!));
    }
  } else if (format === "grayf32") {
    const d = frame.data as Float32Array;
    for (let y = 0; y < height; y += step) {
      const row = y * stride;
      for (let x = 0; x < width; x += step) grid[o++] = clamp255(255 * d[row + x]!);
    }
  } else {
    const d = frame.data as Float32Array;
    const plane = width * height;
    for (let y = 0; y < height; y += step) {
      for (let x = 0, i = y * width; x < width; x += step, i += step) {
        grid[o++] = clamp255(255 * (0.299 * d[i]! + 0.587 * d[i + plane]! + 0.114 * d[i + 2 * plane]!));
      }
    }
  }
  return { width: gw, height: gh, step, data: grid };
}

function clamp255(v: number): number {
  return v <= 0 ? 0 : v >= 255 ? 255 : (v + 0.5) | 0;
}
