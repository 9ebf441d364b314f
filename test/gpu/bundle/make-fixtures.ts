/**
 * Makes the bundle's videos with ffmpeg (where the bundle is built, never on the GPU host) and
 * their reference framemd5s in the layout NVDEC writes (nv12, or p010le for 10-bit): the
 * software decoder's frames repacked by `ffmpeg -pix_fmt`, an exact reshuffle. Writes
 * DIR/manifest.json. Run by scripts/gpu-bundle.mjs:  node make-fixtures.mjs DIR
 */
import { mkdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";

import { makeBenchVideo } from "../../../bench/decode-fixtures.js";
import { LABEL_MIX, makeSegments } from "../../sdk/labels/fixtures.js";
import { makeVideo, type MakeVideoOptions } from "../../helpers/make-video.js";
import { layoutMd5s } from "./references.js";
import type { Layout, Manifest, VideoEntry } from "./shared.js";

const VIDEOS: [name: string, options: MakeVideoOptions, layout: Layout][] = [
  [
    "h264 with B-frames",
    { codec: "h264", width: 320, height: 192, frames: 30, bframes: 3, name: "h264-bframes.mp4" },
    "nv12",
  ],
  ["hevc 8-bit", { codec: "hevc", width: 320, height: 192, frames: 24, bframes: 2, name: "hevc-8bit.mp4" }, "nv12"],
  [
    "hevc 10-bit",
    { codec: "hevc", width: 320, height: 192, frames: 24, pixFmt: "yuv420p10le", name: "hevc-10bit.mp4" },
    "p010le",
  ],
  ["vp9", { codec: "vp9", width: 320, height: 192, frames: 24, name: "vp9.mp4" }, "nv12"],
  ["av1", { codec: "av1", width: 320, height: 192, frames: 24, name: "av1.mp4" }, "nv12"],
];

const dir = process.argv[2];
if (!dir) throw new Error("Expected the output folder as the first argument but received none");
await mkdir(join(dir, "labels"), { recursive: true });
const videos: VideoEntry[] = [];
for (const [name, options, layout] of VIDEOS) {
  const file = await makeVideo(dir, options);
  const md5 = await layoutMd5s(file, layout);
  if (md5.length !== options.frames)
    throw new Error(`${name}: ffmpeg hashed ${md5.length} of ${options.frames} frames`);
  videos.push({ name, file: basename(file), codec: options.codec, layout, frames: options.frames, md5 });
}
await makeSegments(join(dir, "labels"), "mix.mp4", LABEL_MIX);
const bench = await makeBenchVideo(dir, "h264", 1920, 1080, 300);
const manifest: Manifest = {
  builtAt: new Date().toISOString(),
  videos,
  bench: { file: basename(bench), codec: "h264", frames: 300 },
  labels: { dir: "labels" },
};
await writeFile(join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
