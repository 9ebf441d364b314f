/**
 * What indexing one object costs by container, side by side on the same frames: range reads
 * and bytes read by buildIndex (what the edge spends per object, once per etag). The video is
 * encoded once (lossless, noisy: frames near their raw size) and stream-copied into each container.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/index-cost.js [--frames 100] [--size 320x240] [--json]
 */
import { execFile } from "node:child_process";
import { open as openFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { buildIndex } from "../common/media-index/index.js";

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    frames: { type: "string", default: "100" },
    size: { type: "string", default: "320x240" },
    json: { type: "boolean", default: false },
  },
});
const ffmpeg = (args: string[]) => run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args]);

const layouts: [string, string[]][] = [
  ["mp4 (moov at the end)", []],
  ["mp4 (faststart)", ["-movflags", "+faststart"]],
  ["mkv (Cues at the end)", ["-f", "matroska"]],
  ["mkv (live: no Cues, unknown-size Segment)", ["-f", "matroska", "-live", "1"]],
  ["ts", ["-f", "mpegts"]],
];

const dir = await mkdtemp(join(tmpdir(), "ec-bench-index-"));
try {
  const source = join(dir, "source.mkv");
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=${values.size}:rate=25`,
    "-frames:v",
    values.frames,
    "-vf",
    "noise=alls=60:allf=t",
    "-pix_fmt",
    "yuv420p",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-qp",
    "0",
    "-g",
    "25",
    source,
  ]);
  const rows = [];
  for (const [i, [name, args]] of layouts.entries()) {
    const file = join(dir, `copy-${i}.${name.split(" ")[0]}`);
    await ffmpeg(["-i", source, "-c", "copy", ...args, file]);
    const handle = await openFile(file, "r");
    const { size } = await handle.stat();
    let reads = 0,
      bytes = 0;
    const began = performance.now();
    const index = await buildIndex(
      {
        size,
        read: async (offset, length) => {
          reads++;
          bytes += length;
          const buf = new Uint8Array(length);
          await handle.read(buf, 0, length, offset);
          return buf;
        },
      },
      { key: file, etag: "e" },
    );
    const ms = performance.now() - began;
    await handle.close();
    rows.push({ layout: name, size, frames: index.video?.frameCount ?? 0, reads, bytes, fraction: bytes / size, ms });
  }
  if (values.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
  else {
    process.stdout.write(
      "| layout | object bytes | frames | range reads | bytes read | of the object | ms (local file) |\n|---|---|---|---|---|---|---|\n",
    );
    for (const r of rows)
      process.stdout.write(
        `| ${r.layout} | ${r.size} | ${r.frames} | ${r.reads} | ${r.bytes} | ${r.fraction.toFixed(3)} | ${r.ms.toFixed(0)} |\n`,
      );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
