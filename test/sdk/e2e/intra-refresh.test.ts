import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type SdkError } from "../../../sdk/index.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeX264, probePackets } from "../../helpers/make-video.js";

let dir: string;
const md5s = new Map<string, string[]>();

/** x264 with `params`: 60 frames of 96x64 into `name` (under its own folder, one dataset each). */
async function x264(name: string, bframes: number, params: string, preset = "ultrafast"): Promise<void> {
  await mkdir(join(dir, name));
  const file = join(dir, name, name);
  await makeX264(file, { bframes, params, preset });
  md5s.set(name, await ffmpegFrameMd5s(file));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-intra-refresh-"));
  // Intra refresh: one IDR, then sync samples that are recovery points (SEI), no more IDRs. With
  // B-frames, the pictures after each recovery point in decode order but shown before it
  // reference frames before it. Open GOP: non-IDR I-frames (recovery points with a count of 0)
  // whose leading B-frames reference the GOP before.
  await Promise.all([
    x264("ir.mp4", 0, "intra-refresh=1:keyint=20"),
    x264("ir-b.mp4", 2, "intra-refresh=1:keyint=20"),
    x264("open-gop.mp4", 3, "open-gop=1:keyint=20:min-keyint=20:scenecut=0", "medium"),
  ]);
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const files = ["ir.mp4", "ir-b.mp4", "open-gop.mp4"];

describe("H.264 recovery points (intra refresh, open GOP) as the only random-access points after the first frame", () => {
  it.each(files)(
    "the muxer marks recovery points of %s as sync samples, leading B-frames where there are B-frames",
    async (name) => {
      const packets = await probePackets(join(dir, name, name));
      const keys = packets.flatMap((p, i) => (p.keyframe ? [i] : []));
      expect(keys.length).toBe(3);
      const leading = keys.slice(1).some((k) => packets.slice(k + 1, k + 4).some((p) => p.pts < packets[k]!.pts));
      expect(leading).toBe(name !== "ir.mp4");
    },
  );

  it.each(files)("every frame of %s, as its own clip, equals ffmpeg's", async (name) => {
    const errors: SdkError[] = [];
    const ds = await open(join(dir, name), {
      device: "cpu",
      format: "native",
      frames: 1,
      hop: 1,
      align: "exact",
      onError: (e) => errors.push(e),
    });
    let frames = 0;
    for await (const b of ds) frames += expectFramesMatch(b, (key) => md5s.get(key));
    await ds.close();
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(frames).toBe(60);
  });

  it.each(files)("keyframe-aligned clips of %s deliver ffmpeg's frames", async (name) => {
    const errors: SdkError[] = [];
    const ds = await open(join(dir, name), {
      device: "cpu",
      format: "native",
      frames: 8,
      shuffle: "none",
      align: "keyframe",
      onError: (e) => errors.push(e),
    });
    let frames = 0;
    for await (const b of ds) frames += expectFramesMatch(b, (key) => md5s.get(key));
    await ds.close();
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(frames).toBeGreaterThanOrEqual(3 * 8);
  });
});
