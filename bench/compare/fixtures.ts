/**
 * The videos every row reads: made by ffmpeg into `dir`, or the .mp4 files of --videos DIR
 * copied there, so the local dataset holds exactly what the edge holds. With a bitrate (the
 * presets) they are gameplay-like videos made once per machine and cached (gameplay-video.ts),
 * then linked or copied into `dir`.
 */
import { copyFile, link, readdir } from "node:fs/promises";
import { join } from "node:path";
import { makeVideo } from "../../test/helpers/make-video.js";
import { gameplayVideo } from "../gameplay-video.js";
import type { CompareConfig } from "./args.js";

/**
 * Returns the video paths in `dir` (sorted): `config.count` videos made there (codecs in turn),
 * or copies of the .mp4 files of `config.videos`.
 *
 * @example
 * const files = await videoFiles(config, tmp);
 */
export async function videoFiles(config: CompareConfig, dir: string): Promise<string[]> {
  if (config.videos !== undefined) {
    const names = (await readdir(config.videos)).filter((n) => n.toLowerCase().endsWith(".mp4")).sort();
    if (names.length === 0) throw new Error(`Expected .mp4 files in ${config.videos} but received none`);
    for (const n of names) await copyFile(join(config.videos, n), join(dir, n));
    return names.map((n) => join(dir, n));
  }
  const files: string[] = [];
  for (let i = 0; i < config.count; i++) {
    const codec = config.codecs[i % config.codecs.length]!;
    const name = `video-${String(i).padStart(3, "0")}.mp4`;
    if (config.bitrateMbps !== undefined) {
      const made = await gameplayVideo({
        codec,
        width: config.width,
        height: config.height,
        fps: config.fps,
        gop: config.gop,
        seconds: config.seconds,
        bitrateMbps: config.bitrateMbps,
        // Each codec gets faststart and moov-at-the-end videos alike.
        faststart: Math.floor(i / config.codecs.length) % 2 === 0,
        seed: i,
      });
      const to = join(dir, name);
      await link(made, to).catch(() => copyFile(made, to));
      files.push(to);
      continue;
    }
    files.push(
      await makeVideo(dir, {
        codec,
        width: config.width,
        height: config.height,
        frames: config.seconds * config.fps,
        fps: config.fps,
        gop: config.gop,
        bframes: 2,
        faststart: i % 2 === 0,
        name,
      }),
    );
  }
  return files;
}
