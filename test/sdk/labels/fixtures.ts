/**
 * Videos with known black, frozen, cut, letterboxed and corrupt stretches, made by ffmpeg at
 * test time, and a reference decode (ffmpeg → gray frames with their frame numbers) that
 * stands in for the native decoder: a frame ffmpeg cannot decode never arrives, as with ours.
 */
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { LabelClipInfo, VideoFrame } from "../../../sdk/labels/index.js";
import { encoderArgs, ffmpeg } from "../../helpers/ffmpeg-args.js";
import { probePackets } from "../../helpers/make-video.js";

const run = promisify(execFile);

export type Segment =
  | { kind: "testsrc"; frames: number }
  | { kind: "mandelbrot"; frames: number }
  | { kind: "black"; frames: number }
  | { kind: "gray"; frames: number }
  | { kind: "still"; frames: number }
  | { kind: "letterbox"; frames: number; bar: number };

/** Five 16-frame clips: clean, black, frozen, a cut at frame 56, clean (the labels pipeline test and the GPU bundle). */
export const LABEL_MIX: readonly Segment[] = [
  { kind: "testsrc", frames: 16 },
  { kind: "black", frames: 16 },
  { kind: "still", frames: 16 },
  { kind: "testsrc", frames: 8 },
  { kind: "mandelbrot", frames: 8 },
  { kind: "mandelbrot", frames: 16 },
];

export const W = 160;
export const H = 120;
export const FPS = 25;

function source(s: Segment, i: number): string {
  const r = `rate=${FPS}`;
  const trim = `trim=end_frame=${s.frames}`;
  switch (s.kind) {
    case "testsrc":
      // Each testsrc segment starts at a different time so two of them are not one continuous shot.
      return `testsrc2=size=${W}x${H}:${r},trim=start_frame=${i * 40}:end_frame=${i * 40 + s.frames},setpts=PTS-STARTPTS[s${i}]`;
    case "mandelbrot":
      return `mandelbrot=size=${W}x${H}:${r},${trim}[s${i}]`;
    case "black":
      return `color=black:size=${W}x${H}:${r},${trim}[s${i}]`;
    case "gray":
      return `color=0x808080:size=${W}x${H}:${r},${trim}[s${i}]`;
    case "still":
      return `testsrc2=size=${W}x${H}:${r},trim=end_frame=1,loop=loop=${s.frames - 1}:size=1,setpts=N/${FPS}/TB[s${i}]`;
    case "letterbox":
      return `testsrc2=size=${W}x${H - 2 * s.bar}:${r},${trim},pad=${W}:${H}:0:${s.bar}:black[s${i}]`;
  }
}

/**
 * Encodes the segments back to back as one h264 MP4 with a keyframe every `gop` frames.
 *
 * @example
 * const file = await makeSegments(dir, "mix.mp4", [{ kind: "testsrc", frames: 16 }, { kind: "black", frames: 16 }]);
 */
export async function makeSegments(dir: string, name: string, segments: readonly Segment[], gop = 16): Promise<string> {
  const out = join(dir, name);
  const graph = `${segments.map(source).join(";")};${segments.map((_, i) => `[s${i}]`).join("")}concat=n=${segments.length}:v=1,setsar=1,format=yuv420p[v]`;
  await ffmpeg([...["-filter_complex", graph, "-map", "[v]"], ...encoderArgs("h264", { gop, bframes: 0 }), out]);
  return out;
}

/**
 * Overwrites the bytes of packets [first, last] (display frames, bframes 0) with 0xff: their
 * NAL lengths become impossible, so the decoder drops them and conceals what follows in the GOP.
 */
export async function corruptFrames(file: string, out: string, first: number, last: number): Promise<void> {
  const packets = await probePackets(file);
  const bytes = await readFile(file);
  for (let i = first; i <= last; i++) {
    const p = packets[i]!;
    bytes.fill(0xff, p.pos, p.pos + p.size);
  }
  await writeFile(out, bytes);
}

export interface DecodedVideo {
  width: number;
  height: number;
  /** Frame number (pts in frames) → gray pixels, in output order. */
  frames: { index: number; data: Uint8Array }[];
}

/** Decodes to 8-bit gray with each frame's number; frames the decoder drops are absent. */
export async function decodeGray(file: string, dir: string, pixFmt: "gray" | "rgb24" = "gray"): Promise<DecodedVideo> {
  const base = join(dir, `${file.split("/").pop()}.${pixFmt}`);
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "quiet",
    "-y",
    "-i",
    file,
    "-map",
    "0:v",
    "-fps_mode",
    "passthrough",
    "-f",
    "framemd5",
    `${base}.md5`,
    "-map",
    "0:v",
    "-fps_mode",
    "passthrough",
    "-pix_fmt",
    pixFmt,
    "-f",
    "rawvideo",
    `${base}.raw`,
  ]);
  const lines = (await readFile(`${base}.md5`, "utf8")).split("\n").filter((l) => l && !l.startsWith("#"));
  const raw = await readFile(`${base}.raw`);
  const size = W * H * (pixFmt === "gray" ? 1 : 3);
  if (raw.length !== lines.length * size)
    throw new Error(`decode of ${file}: ${raw.length} bytes for ${lines.length} frames`);
  return {
    width: W,
    height: H,
    frames: lines.map((l, i) => ({
      index: Number(l.split(",")[1]),
      data: new Uint8Array(raw.buffer, raw.byteOffset + i * size, size),
    })),
  };
}

/** Splits a decoded video into consecutive clips of `n` frames as the pipeline would hand them over. */
export function clipsOf(
  video: DecodedVideo,
  key: string,
  n: number,
  total: number,
  format: "gray" | "rgb24" = "gray",
): { info: LabelClipInfo; frames: VideoFrame[] }[] {
  const out: { info: LabelClipInfo; frames: VideoFrame[] }[] = [];
  for (let start = 0; start + n <= total; start += n) {
    const frames = video.frames
      .filter((f) => f.index >= start && f.index < start + n)
      .map((f): VideoFrame => ({ format, width: video.width, height: video.height, data: f.data }));
    out.push({
      info: {
        key,
        etag: `etag-${key.replace(/[^a-z0-9]/gi, "")}`,
        start,
        frames: n,
        stride: 1,
        source: { width: W, height: H, fps: FPS, duration: total / FPS },
      },
      frames,
    });
  }
  return out;
}
