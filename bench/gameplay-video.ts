/**
 * Videos as labs hold them, for the bench's presets and the decode bench: 60 fps content busy
 * enough that the encoder spends its whole bitrate on every frame (testsrc2's moving pattern
 * under fresh temporal noise each frame, as a high-motion game fills its bitrate), encoded at a
 * gameplay bitrate with long GOPs. Making one at 1080p costs a minute of CPU, so each is kept
 * under ${XDG_CACHE_HOME:-~/.cache}/ec/bench-videos/, named by a hash of everything that shapes
 * its bytes (the options, the ffmpeg arguments and ffmpeg's version), and made once per machine.
 */
import { execFile, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface GameplayVideo {
  readonly codec: "h264" | "hevc";
  readonly width: number;
  readonly height: number;
  readonly fps: number;
  /** Keyframe interval in frames (fixed: no scene-cut keyframes). */
  readonly gop: number;
  readonly seconds: number;
  readonly bitrateMbps: number;
  /** moov before mdat. */
  readonly faststart: boolean;
  /** Makes videos of the same options differ (the noise's seed). */
  readonly seed: number;
}

/**
 * The ffmpeg arguments that make `v` into `out`: H.264 High (libx264 veryfast, 3 B-frames) or
 * HEVC (libx265 ultrafast, 3 B-frames), average bitrate with a VBV cap of 1.25 × it.
 *
 * @example
 * gameplayArgs({ codec: "h264", width: 1920, height: 1080, fps: 60, gop: 240, seconds: 8, bitrateMbps: 12, faststart: true, seed: 0 }, "a.mp4");
 */
export function gameplayArgs(v: GameplayVideo, out: string): string[] {
  const kbps = Math.round(v.bitrateMbps * 1000);
  const vbv = { max: Math.round(kbps * 1.25), buf: kbps * 2 };
  const source = `testsrc2=size=${v.width}x${v.height}:rate=${v.fps},noise=alls=10:allf=t+u:all_seed=${v.seed + 1}`;
  const codec =
    v.codec === "h264"
      ? [
          ...["-c:v", "libx264", "-preset", "veryfast", "-profile:v", "high", "-bf", "3"],
          ...["-g", String(v.gop), "-keyint_min", String(v.gop), "-sc_threshold", "0"],
          ...["-b:v", `${kbps}k`, "-maxrate", `${vbv.max}k`, "-bufsize", `${vbv.buf}k`],
        ]
      : [
          ...["-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1", "-b:v", `${kbps}k`],
          "-x265-params",
          `log-level=error:bframes=3:keyint=${v.gop}:min-keyint=${v.gop}:scenecut=0:vbv-maxrate=${vbv.max}:vbv-bufsize=${vbv.buf}`,
        ];
  return [
    ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source],
    ...["-frames:v", String(v.seconds * v.fps), "-pix_fmt", "yuv420p", "-an"],
    ...codec,
    ...(v.faststart ? ["-movflags", "+faststart"] : []),
    out,
  ];
}

function ffmpegVersion(): string {
  const r = spawnSync("ffmpeg", ["-version"], { encoding: "utf8" });
  return r.status === 0 ? (r.stdout.split("\n")[0] ?? "") : "";
}

/** The cache folder of made videos. */
export function gameplayCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "ec", "bench-videos");
}

/**
 * The path of the video `v`, made first if this machine has not made it yet (written beside its
 * final name, then renamed: a killed run leaves no half file under it).
 *
 * @example
 * const file = await gameplayVideo({ codec: "hevc", width: 1280, height: 720, fps: 60, gop: 120, seconds: 8, bitrateMbps: 8, faststart: false, seed: 1 });
 */
export async function gameplayVideo(v: GameplayVideo, dir: string = gameplayCacheDir()): Promise<string> {
  const hash = createHash("sha256")
    .update(JSON.stringify(gameplayArgs(v, "OUT")))
    .update(`\0${ffmpegVersion()}`)
    .digest("hex")
    .slice(0, 16);
  const out = join(dir, `${v.codec}-${v.width}x${v.height}-${v.fps}fps-g${v.gop}-${v.bitrateMbps}M-${hash}.mp4`);
  if (existsSync(out)) return out;
  await mkdir(dir, { recursive: true });
  const partial = `${out}.partial-${process.pid}.mp4`;
  try {
    await run("ffmpeg", gameplayArgs(v, partial), { maxBuffer: 1 << 20 });
    await rename(partial, out);
  } finally {
    await rm(partial, { force: true });
  }
  return out;
}
