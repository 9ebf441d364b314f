/** Reference md5s for the GPU bundle, made where it is built: the software decode as NVDEC lays frames out. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

import type { Layout } from "./shared.js";

const run = promisify(execFile);

/** The md5 column of `ffmpeg -i FILE -pix_fmt nv12|p010le -f framemd5 -` (an exact repack of the decoded planes). */
export async function layoutMd5s(file: string, layout: Layout): Promise<string[]> {
  const args = [
    "-v",
    "error",
    "-i",
    file,
    "-map",
    "0:v:0",
    "-fps_mode",
    "passthrough",
    "-pix_fmt",
    layout,
    "-f",
    "framemd5",
    "-",
  ];
  const { stdout } = await run("ffmpeg", args, { maxBuffer: 64 << 20 });
  return stdout
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => line.split(",").at(-1)!.trim());
}
