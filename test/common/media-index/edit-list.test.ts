import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeIndex, encodeIndex, isShown } from "../../../common/media-index/index.js";
import { cutCopy, patchEdit } from "../../helpers/edit-list.js";
import { ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { makeVideo, probePackets } from "../../helpers/make-video.js";

let dir: string;
let h264: string;
let hevc: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-elst-"));
  h264 = await makeVideo(dir, { codec: "h264", width: 96, height: 64, frames: 150, fps: 30, gop: 60, bframes: 2 });
  hevc = await makeVideo(dir, { codec: "hevc", width: 96, height: 64, frames: 150, fps: 30, gop: 60, bframes: 3 });
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const indexOf = async (file: string) => (await indexLocalFile(file, file.slice(dir.length + 1))).index;

describe("edit lists are applied as ffmpeg applies them", () => {
  const cases: [string, () => Promise<string>][] = [
    [
      "a -ss 2.5 -c copy cut of h264 with B-frames (elst skips 15 frames and the B-frame delay)",
      () => cutCopy(h264, dir, { ss: 2.5, name: "h264-cut.mp4" }),
    ],
    ["a -ss 1.3 -c copy cut of hevc with B-frames", () => cutCopy(hevc, dir, { ss: 1.3, name: "hevc-cut.mp4" })],
    ["an uncut file with B-frames (elst only removes the delay)", async () => h264],
    [
      "an empty edit (a delay of 1 s from -itsoffset) before the media edit",
      () => cutCopy(h264, dir, { itsoffset: 1, name: "delay.mp4" }),
    ],
    ["a delay and a cut", () => cutCopy(h264, dir, { itsoffset: 0.5, ss: 2.5, name: "delay-cut.mp4" })],
  ];
  it.each(cases)(
    "%s: samples equal ffprobe's packets, and the shown ones are ffmpeg's frames",
    async (_name, make) => {
      const file = await make();
      const index = await indexOf(file);
      expect(index.error).toBeUndefined();
      const track = index.video!;
      const s = track.samples;
      const packets = await probePackets(file);
      expect(Array.from(s.offset)).toEqual(packets.map((p) => p.pos));
      expect(Array.from(s.size)).toEqual(packets.map((p) => p.size));
      expect(Array.from(s.keyframe, (k) => k === 1)).toEqual(packets.map((p) => p.keyframe));
      expect(Array.from(s.pts)).toEqual(packets.map((p) => p.pts));
      expect(Array.from(s.dts)).toEqual(packets.map((p) => p.dts));
      // ffprobe flags what the demuxer drops after decoding: exactly the samples outside the window.
      expect(Array.from(s.pts, (p) => !isShown(track.edit, p))).toEqual(packets.map((p) => p.discard));
      const frames = (await ffmpegFrameMd5s(file)).length;
      expect(track.frameCount).toBe(frames);
      expect(track.duration).toBeCloseTo(frames / 30, 6);
      // The window survives the encoded form the edge caches.
      expect(decodeIndex(encodeIndex(index)).video!.edit).toEqual(track.edit);
    },
    30_000,
  );

  it("the cut shows 15 fewer frames than it has samples: frame 0 is the first frame after the edit", async () => {
    const track = (await indexOf(await cutCopy(h264, dir, { ss: 2.5, name: "h264-cut-15.mp4" }))).video!;
    expect(track.samples.pts.length - track.frameCount).toBe(15);
    expect(track.edit).toEqual({ start: 0, end: 75 * 512 });
    expect(Math.min(...track.samples.pts)).toBe(-15 * 512);
  });

  it("an edit that ends early: samples after its end are kept for decoding but not shown", async () => {
    const cut = await cutCopy(h264, dir, { ss: 2.5, name: "h264-cut-long.mp4" });
    const file = await patchEdit(cut, join(dir, "short-edit.mp4"), { duration: 1000 });
    const track = (await indexOf(file)).video!;
    expect(track.frameCount).toBe((await ffmpegFrameMd5s(file)).length);
    expect(track.frameCount).toBe(30);
    expect(track.edit).toEqual({ start: 0, end: 15360 });
    // ffprobe lists the samples its demuxer keeps (through the next keyframe); those agree too.
    const packets = await probePackets(file);
    const s = track.samples;
    packets.forEach((p, i) => {
      expect([s.offset[i], s.pts[i], !isShown(track.edit, s.pts[i]!)]).toEqual([p.pos, p.pts, p.discard]);
    });
  });

  it("an edit at another rate (a dwell) is an ERR_UNSUPPORTED_EDIT_LIST record, not wrong frames", async () => {
    const file = await patchEdit(h264, join(dir, "dwell.mp4"), { rate: 0 });
    const index = await indexOf(file);
    expect(index.kind).toBe("error");
    expect(index.error).toMatchObject({ code: "ERR_UNSUPPORTED_EDIT_LIST" });
    expect(index.error!.message).toMatch(/rate of 0/);
  });
});
