import { execFile } from "node:child_process";
import { mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { DevServiceError } from "./errors.js";

const exec = promisify(execFile);

/** One generated sample: an ffmpeg lavfi source encoded as H.264 MP4. */
export interface SampleSpec {
  readonly name: string;
  /** lavfi source, e.g. "testsrc2" or "mandelbrot". */
  readonly source: "testsrc2" | "mandelbrot";
  readonly width: number;
  readonly height: number;
  readonly seconds: number;
  readonly fps: number;
  /** moov before mdat (`+faststart`) or at the end, where the index needs a suffix range. */
  readonly faststart: boolean;
}

/** The default demo set: both sources, both moov layouts, a few seconds each. */
export const DEFAULT_SAMPLES: readonly SampleSpec[] = [
  {
    name: "testsrc2-320x240-3s.mp4",
    source: "testsrc2",
    width: 320,
    height: 240,
    seconds: 3,
    fps: 30,
    faststart: true,
  },
  {
    name: "mandelbrot-320x240-3s.mp4",
    source: "mandelbrot",
    width: 320,
    height: 240,
    seconds: 3,
    fps: 25,
    faststart: true,
  },
  {
    name: "testsrc2-640x360-4s-moov-at-end.mp4",
    source: "testsrc2",
    width: 640,
    height: 360,
    seconds: 4,
    fps: 30,
    faststart: false,
  },
  {
    name: "mandelbrot-480x272-2s-moov-at-end.mp4",
    source: "mandelbrot",
    width: 480,
    height: 272,
    seconds: 2,
    fps: 25,
    faststart: false,
  },
];

function exists(path: string): boolean {
  try {
    return statSync(path).size > 0;
  } catch {
    return false;
  }
}

/**
 * Makes the sample videos in `dir` with ffmpeg unless they are already there, and returns
 * their paths. Each is written under a temporary name and renamed, so an interrupted run never
 * leaves a half-written sample that later runs would trust.
 *
 * @example
 * const paths = await ensureSamples(join(projectRoot(), ".ec", "samples"));
 */
export async function ensureSamples(dir: string, specs: readonly SampleSpec[] = DEFAULT_SAMPLES): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (const spec of specs) {
    const out = join(dir, spec.name);
    paths.push(out);
    if (exists(out)) continue;
    const tmp = join(dir, `.${spec.name}.${process.pid}.tmp.mp4`);
    const args = [
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      `${spec.source}=size=${spec.width}x${spec.height}:rate=${spec.fps}`,
      "-t",
      String(spec.seconds),
      "-pix_fmt",
      "yuv420p",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-g",
      String(spec.fps),
      "-bf",
      "2",
      ...(spec.faststart ? ["-movflags", "+faststart"] : []),
      "-an",
      tmp,
    ];
    try {
      await exec("ffmpeg", args);
    } catch (cause) {
      rmSync(tmp, { force: true });
      throw new DevServiceError("ERR_DEV_START", `ffmpeg could not make ${spec.name}: ${(cause as Error).message}`, {
        cause,
      });
    }
    renameSync(tmp, out);
  }
  return paths;
}
