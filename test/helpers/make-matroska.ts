/** Matroska, WebM and MPEG-TS fixtures made by ffmpeg at test time. */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface MatroskaOptions {
  codec: "h264" | "hevc" | "vp9" | "av1";
  frames: number;
  width?: number;
  height?: number;
  gop?: number;
  /** `-live 1`: no Cues, a Segment of unknown size (what a live recording leaves). */
  live?: boolean;
  /** Interleave an Opus audio track. */
  audio?: boolean;
  /** Lossless H.264 of noisy frames (about their raw size each: several windows of reads per object). */
  lossless?: boolean;
  name: string;
}

export const encoders: Record<MatroskaOptions["codec"], (gop: number) => string[]> = {
  h264: (gop) => ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", String(gop), "-keyint_min", String(gop), "-sc_threshold", "0"],
  hevc: (gop) => ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", `log-level=error:bframes=3:keyint=${gop}:min-keyint=${gop}:scenecut=0`],
  vp9: (gop) => ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", String(gop), "-keyint_min", String(gop)],
  av1: (gop) => ["-c:v", "libsvtav1", "-preset", "12", "-g", String(gop), "-svtav1-params", "verbosity=0"],
};

/**
 * Encodes testsrc2 into `dir/name` (.mkv or .webm by the name) and returns its path.
 *
 * @example
 * const mkv = await makeMatroska(dir, { codec: "h264", frames: 40, name: "a.mkv" });
 */
export async function makeMatroska(dir: string, o: MatroskaOptions): Promise<string> {
  const out = join(dir, o.name);
  const gop = o.gop ?? 12;
  const audio = o.audio ? ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"] : [];
  const codec = o.lossless ? ["-vf", "noise=alls=60:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", String(gop)] : encoders[o.codec](gop);
  await run("ffmpeg", [
    "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", `testsrc2=size=${o.width ?? 96}x${o.height ?? 64}:rate=25`, ...audio,
    "-frames:v", String(o.frames), "-pix_fmt", "yuv420p", ...codec, ...(o.audio ? ["-c:a", "libopus", "-shortest"] : []), ...(o.live ? ["-live", "1"] : []), out,
  ]);
  return out;
}

/**
 * Encodes testsrc2 into an MPEG transport stream `dir/name` (192-byte M2TS packets with `m2ts`),
 * with an AAC track when asked, and returns its path.
 *
 * @example
 * const ts = await makeTs(dir, { codec: "hevc", frames: 40, audio: true, name: "a.ts" });
 */
export async function makeTs(
  dir: string,
  o: { codec: "h264" | "hevc"; frames: number; gop?: number; audio?: boolean; m2ts?: boolean; width?: number; height?: number; tsOffset?: number; name: string },
): Promise<string> {
  const out = join(dir, o.name);
  const audio = o.audio ? ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"] : [];
  await run("ffmpeg", [
    "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", `testsrc2=size=${o.width ?? 96}x${o.height ?? 64}:rate=25`, ...audio,
    "-frames:v", String(o.frames), "-pix_fmt", "yuv420p", ...encoders[o.codec](o.gop ?? 12), ...(o.audio ? ["-c:a", "aac", "-shortest"] : []),
    ...(o.tsOffset !== undefined ? ["-output_ts_offset", String(o.tsOffset)] : []),
    "-f", "mpegts", ...(o.m2ts ? ["-mpegts_m2ts_mode", "1"] : []), out,
  ]);
  return out;
}
