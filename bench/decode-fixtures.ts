/** Shared by the decode benches: a video made by ffmpeg, its index, and GOP-sized decode calls. */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

import { buildIndex, bytesReader } from "../common/media-index/index.js";
import type { VideoTrackV1 } from "../common/schema/index.js";
import { packetsFromTrack, type Packets } from "../native/index.js";

const run = promisify(execFile);

const encoders: Record<string, string[]> = {
  h264: ["-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", "60"],
  hevc: ["-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=60"],
  vp9: ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "60"],
  av1: ["-c:v", "libsvtav1", "-preset", "12", "-g", "60"],
};

/** testsrc2 at 30 fps, GOP 60 (h264 with 3 B-frames). */
export async function makeBenchVideo(dir: string, codec: string, w: number, h: number, n: number): Promise<string> {
  const args = encoders[codec];
  if (!args)
    throw new Error(
      `Expected one of ${Object.keys(encoders).join(", ")} for --codec but received ${JSON.stringify(codec)}`,
    );
  const out = join(dir, `${codec}-${w}x${h}-${n}.mp4`);
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=${w}x${h}:rate=30`,
    "-frames:v",
    String(n),
    "-pix_fmt",
    "yuv420p",
    ...args,
    out,
  ]);
  return out;
}

export async function indexedFile(file: string): Promise<{ track: VideoTrackV1; bytes: Uint8Array }> {
  const bytes = new Uint8Array(await readFile(file));
  const index = await buildIndex(bytesReader(bytes), { key: file, etag: "bench" });
  if (!index.video) throw new Error(`${file}: ${index.error?.message ?? "no video track"}`);
  return { track: index.video, bytes };
}

/** Whole-file packets split at keyframes into calls of one GOP, as a stream decodes clips. */
export function gopCalls(track: VideoTrackV1, bytes: Uint8Array): Packets[] {
  const keys = [...track.samples.keyframe.keys()].filter((i) => track.samples.keyframe[i] === 1);
  keys.push(track.samples.size.length);
  return keys.slice(0, -1).map((k, i) => packetsFromTrack(track, bytes, 0, k, keys[i + 1]! - k));
}
