import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type SdkError } from "../../../sdk/index.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo, probePackets } from "../../helpers/make-video.js";

let dir: string;
let md5s: string[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-open-gop-"));
  // x265 closes no GOP by default: every keyframe after the first is a CRA whose B-frames lead it.
  const file = await makeVideo(dir, {
    codec: "hevc",
    width: 96,
    height: 64,
    frames: 48,
    gop: 12,
    bframes: 3,
    name: "open-gop.mp4",
  });
  md5s = await ffmpegFrameMd5s(file);
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("open GOPs (HEVC CRA with leading pictures)", () => {
  it("the file has leading pictures: samples after a keyframe in decode order, shown before it", async () => {
    const packets = await probePackets(join(dir, "open-gop.mp4"));
    const keys = packets.flatMap((p, i) => (p.keyframe && i > 0 ? [i] : []));
    expect(keys.some((k) => packets.slice(k + 1, k + 4).some((p) => p.pts < packets[k]!.pts))).toBe(true);
  });

  it("a clip holding a keyframe's leading pictures decodes from the keyframe before: every frame equals ffmpeg's", async () => {
    const errors: SdkError[] = [];
    const ds = await open(dir, {
      device: "cpu",
      format: "native",
      frames: 2,
      hop: 1,
      align: "exact",
      onError: (e) => errors.push(e),
    });
    let frames = 0;
    for await (const b of ds) frames += expectFramesMatch(b, () => md5s);
    await ds.close();
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(frames).toBe(47 * 2);
  });
});
