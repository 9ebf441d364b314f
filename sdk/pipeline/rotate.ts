/**
 * Turns decoded frames upright by a video's rotation (`rotate: "auto"`), pixel-exact like
 * ffmpeg's autorotate (transpose=clock / cclock, hflip+vflip) on the same pixel format.
 */
import { SdkError, SdkErrorCode } from "../errors.js";
import type { DecodedClip, DecodedFrame } from "./decode.js";

type Rotation = 90 | 180 | 270;

/** A plane of a packed frame: log2 subsampling (the same both ways) and bytes per pixel. */
interface PlaneLayout {
  readonly shift: number;
  readonly bytes: number;
}

const p420 = (bytes: number): PlaneLayout[] => [
  { shift: 0, bytes },
  { shift: 1, bytes },
  { shift: 1, bytes },
];
const p444 = (bytes: number): PlaneLayout[] => [
  { shift: 0, bytes },
  { shift: 0, bytes },
  { shift: 0, bytes },
];

/** Formats whose chroma is subsampled alike both ways, so a quarter turn keeps the format. */
const layouts = new Map<string, readonly PlaneLayout[]>([
  ["rgb24", [{ shift: 0, bytes: 3 }]],
  ["gray", [{ shift: 0, bytes: 1 }]],
  ["yuv420p", p420(1)],
  ["yuvj420p", p420(1)],
  ["yuv420p10le", p420(2)],
  ["yuv420p12le", p420(2)],
  ["yuv444p", p444(1)],
  ["yuvj444p", p444(1)],
  ["yuv444p10le", p444(2)],
  ["yuv444p12le", p444(2)],
  [
    "nv12",
    [
      { shift: 0, bytes: 1 },
      { shift: 1, bytes: 2 },
    ],
  ],
  [
    "p010le",
    [
      { shift: 0, bytes: 2 },
      { shift: 1, bytes: 4 },
    ],
  ],
]);

const ceilShift = (n: number, s: number) => -(-n >> s);

function rotatePlane(src: Uint8Array, dst: Uint8Array, w: number, h: number, bytes: number, rotation: Rotation): void {
  // Destination is h wide for a quarter turn, w wide for a half turn.
  const dw = rotation === 180 ? w : h;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const [dx, dy] = rotation === 90 ? [h - 1 - y, x] : rotation === 180 ? [w - 1 - x, h - 1 - y] : [y, w - 1 - x];
      const from = (y * w + x) * bytes;
      const to = (dy * dw + dx) * bytes;
      for (let b = 0; b < bytes; b++) dst[to + b] = src[from + b]!;
    }
  }
}

/** One frame turned clockwise by `rotation`. */
export function rotateFrame(frame: DecodedFrame, rotation: Rotation): DecodedFrame {
  const planes = layouts.get(frame.format);
  if (!planes) {
    throw new SdkError(
      SdkErrorCode.RotateUnsupported,
      `Expected frames in rgb24 or one of ${[...layouts.keys()].filter((k) => k !== "rgb24").join(", ")} to rotate but received ${frame.format}`,
    );
  }
  const { width: w, height: h } = frame;
  const sizes = planes.map((p) => ceilShift(w, p.shift) * ceilShift(h, p.shift) * p.bytes);
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== frame.data.byteLength) {
    throw new SdkError(
      SdkErrorCode.RotateUnsupported,
      `Expected ${total} bytes in a packed ${w}x${h} ${frame.format} frame but received ${frame.data.byteLength}`,
    );
  }
  const out = new Uint8Array(total);
  let at = 0;
  planes.forEach((p, i) => {
    const size = sizes[i]!;
    rotatePlane(
      frame.data.subarray(at, at + size),
      out.subarray(at, at + size),
      ceilShift(w, p.shift),
      ceilShift(h, p.shift),
      p.bytes,
      rotation,
    );
    at += size;
  });
  const quarter = rotation !== 180;
  return { ...frame, data: out, width: quarter ? h : w, height: quarter ? w : h };
}

/**
 * A clip's frames turned clockwise by `rotation` (0 returns it as is). GPU copies of the frames
 * (`gpuFrames`, what labelers read) stay as coded.
 *
 * @example
 * const upright = rotateClip(decoded, track.rotation ?? 0);
 */
export function rotateClip(clip: DecodedClip, rotation: 0 | Rotation): DecodedClip {
  if (rotation === 0) return clip;
  return { ...clip, frames: clip.frames.map((f) => rotateFrame(f, rotation)) };
}
