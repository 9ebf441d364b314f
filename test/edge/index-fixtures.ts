/**
 * Global setup of the edge tests (runs in Node): ffmpeg makes the media fixtures, ffprobe
 * lists their packets, and both reach the workerd tests through provide/inject.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { makeImage, makeNpy, makeVideo, probePackets, type ProbePacket } from "../helpers/make-video.js";

export interface MediaFixture {
  /** base64 of the file's bytes. */
  bytes: string;
  /** ffprobe -show_packets of the first video stream, for videos. */
  packets?: ProbePacket[];
}

declare module "vitest" {
  export interface ProvidedContext {
    mediaFixtures: Record<string, MediaFixture>;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), "ec-edge-fixtures-"));
  const videos = {
    "h264-bframes-tail.mp4": await makeVideo(dir, { codec: "h264", width: 160, height: 96, frames: 30, bframes: 2 }),
    "h264-faststart.mp4": await makeVideo(dir, { codec: "h264", width: 160, height: 96, frames: 30, faststart: true }),
    "hevc.mp4": await makeVideo(dir, { codec: "hevc", width: 160, height: 96, frames: 24, bframes: 2 }),
    "odd-321x181.mp4": await makeVideo(dir, { codec: "h264", width: 321, height: 181, frames: 12, pixFmt: "yuv444p" }),
    "audio.mp4": await makeVideo(dir, { codec: "h264", width: 160, height: 96, frames: 25, audio: true }),
    "fragmented.mp4": await makeVideo(dir, {
      codec: "h264",
      width: 160,
      height: 96,
      frames: 30,
      bframes: 2,
      audio: true,
      fragmented: true,
    }),
    "other-version.mp4": await makeVideo(dir, { codec: "h264", width: 128, height: 64, frames: 10, name: "v2.mp4" }),
  };
  const fixtures: Record<string, MediaFixture> = {};
  for (const [name, path] of Object.entries(videos)) {
    fixtures[name] = { bytes: (await readFile(path)).toString("base64"), packets: await probePackets(path) };
  }
  const tail = await readFile(videos["h264-bframes-tail.mp4"]);
  fixtures["truncated.mp4"] = { bytes: tail.subarray(0, Math.floor(tail.length / 2)).toString("base64") };
  const others = {
    "image.jpg": await makeImage(dir, { format: "jpeg", width: 64, height: 48 }),
    "image.png": await makeImage(dir, { format: "png", width: 63, height: 47, alpha: true }),
    "array.npy": await makeNpy(dir, { dtype: "<f4", shape: [4, 5] }),
  };
  for (const [name, path] of Object.entries(others))
    fixtures[name] = { bytes: (await readFile(path)).toString("base64") };
  project.provide("mediaFixtures", fixtures);
  return () => rm(dir, { recursive: true, force: true });
}
