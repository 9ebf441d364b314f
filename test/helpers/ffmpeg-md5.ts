/** What ffmpeg itself says each frame of a file is: the reference delivered frames are checked against. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The md5 of every frame of the first video stream, in presentation order, as `ffmpeg -f framemd5`
 * computes it over the decoder's own pixel format (index = 0-based frame number).
 *
 * @example
 * const md5s = await ffmpegFrameMd5s(file); md5s[12]; // frame 12
 */
export async function ffmpegFrameMd5s(file: string): Promise<string[]> {
  const { stdout } = await run(
    "ffmpeg",
    ["-hide_banner", "-loglevel", "error", "-i", file, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"],
    { maxBuffer: 64 << 20 },
  );
  return stdout.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.split(",").at(-1)!.trim());
}
