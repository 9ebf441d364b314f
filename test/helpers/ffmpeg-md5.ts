/** What ffmpeg itself says each frame of a file is: the reference delivered frames are checked against. */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { expect } from "vitest";
import type { Batch } from "../../sdk/index.js";

const run = promisify(execFile);

/**
 * The md5 of every frame of the first (or `stream`-th) video stream, in presentation order, as
 * `ffmpeg -f framemd5` computes it over the decoder's own pixel format (index = 0-based frame
 * number); `autorotate: false` keeps rotated video as coded; `input` goes before `-i` (e.g.
 * `["-hwaccel", "cuda"]`).
 *
 * @example
 * const md5s = await ffmpegFrameMd5s(file); md5s[12]; // frame 12
 */
export async function ffmpegFrameMd5s(
  file: string,
  o: { stream?: number; autorotate?: boolean; input?: readonly string[] } = {},
): Promise<string[]> {
  // ffmpeg turns frames by the display matrix unless told not to; ec delivers them as coded by default.
  const rotate = o.autorotate === false ? ["-noautorotate"] : [];
  const { stdout } = await run(
    "ffmpeg",
    [
      "-hide_banner",
      "-loglevel",
      "error",
      ...rotate,
      ...(o.input ?? []),
      "-i",
      file,
      "-map",
      `0:v:${o.stream ?? 0}`,
      "-fps_mode",
      "passthrough",
      "-f",
      "framemd5",
      "-",
    ],
    { maxBuffer: 64 << 20 },
  );
  return stdout
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => l.split(",").at(-1)!.trim());
}

/**
 * Checks every frame of a batch against the reference md5s of its object (`ffmpegFrameMd5s`),
 * by its 0-based presentation index; returns how many frames were checked. Objects for which
 * `wantOf` returns undefined are not checked.
 *
 * @example
 * for await (const b of ds) frames += expectFramesMatch(b, (key) => md5s.get(key));
 */
export function expectFramesMatch(
  batch: Pick<Batch, "clips" | "decoded">,
  wantOf: (key: string) => readonly string[] | undefined,
): number {
  let checked = 0;
  batch.decoded.forEach((clip, i) => {
    const info = batch.clips[i]!;
    const want = wantOf(info.key);
    if (!want) return;
    clip.frames.forEach((f, t) => {
      const index = info.start + t * info.stride;
      expect(createHash("md5").update(f.data).digest("hex"), `${info.key} frame ${index}`).toBe(want[index]);
      checked++;
    });
  });
  return checked;
}
