/**
 * What the fixture makers hand ffmpeg alike: the quiet invocation, the synthetic lavfi inputs and
 * one encoder setting per codec, so that an MP4, a Matroska file and a transport stream of the
 * same codec are encoded the same way.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

export type FixtureCodec = "h264" | "hevc" | "av1" | "vp8" | "vp9";

/**
 * Runs ffmpeg without its banner and chatter, overwriting the output; rejects with its stderr.
 *
 * @example
 * await ffmpeg([...testsrc2(96, 64), "-frames:v", "10", join(dir, "a.mp4")]);
 */
export async function ffmpeg(args: readonly string[]): Promise<void> {
  await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args]);
}

/** A lavfi testsrc2 input of that size and rate. */
export function testsrc2(width: number, height: number, fps = 25): string[] {
  return ["-f", "lavfi", "-i", `testsrc2=size=${width}x${height}:rate=${fps}`];
}

/** A lavfi 440 Hz sine at 48 kHz: the audio track of the fixtures that carry one. */
export const SINE_INPUT: readonly string[] = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"];

/**
 * The encoder of `codec` at its fastest setting, a keyframe every `gop` frames and no scene-cut
 * keyframes; `bframes` (h264/hevc) is the most consecutive B-frames.
 *
 * @example
 * encoderArgs("h264", { gop: 12, bframes: 2 }); // ["-c:v", "libx264", "-preset", "ultrafast", …]
 */
export function encoderArgs(codec: FixtureCodec, o: { gop: number; bframes: number }): string[] {
  return encoders[codec](String(o.gop), String(o.bframes));
}

const encoders: Record<FixtureCodec, (gop: string, bframes: string) => string[]> = {
  h264: (gop, bframes) => [
    ...["-c:v", "libx264", "-preset", "ultrafast", "-bf", bframes],
    ...["-g", gop, "-keyint_min", gop, "-sc_threshold", "0"],
  ],
  hevc: (gop, bframes) => [
    ...["-c:v", "libx265", "-preset", "ultrafast"],
    ...["-x265-params", `log-level=error:bframes=${bframes}:keyint=${gop}:min-keyint=${gop}:scenecut=0`],
  ],
  av1: (gop) => ["-c:v", "libsvtav1", "-preset", "12", "-g", gop, "-svtav1-params", "verbosity=0"],
  // VP8 goes in WebM (name the file .webm): the MP4 muxer takes no VP8.
  vp8: (gop) => [
    "-c:v",
    "libvpx",
    "-deadline",
    "realtime",
    "-cpu-used",
    "8",
    "-b:v",
    "1M",
    "-g",
    gop,
    "-keyint_min",
    gop,
  ],
  vp9: (gop) => ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", gop, "-keyint_min", gop],
};
