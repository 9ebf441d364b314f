import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type SdkError } from "../../../sdk/index.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { probePackets } from "../../helpers/make-video.js";
import { ffmpeg } from "../../helpers/ffmpeg-args.js";

let dir: string;
let file: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-ts-tracks-"));
  await mkdir(join(dir, "ds"));
  file = join(dir, "ds", "two.ts");
  // Two video streams (H.264 96x64 of testsrc2, HEVC 80x48 of testsrc) and an AAC track between them.
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=96x64:rate=25:duration=1.2",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=48000:duration=1.2",
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=80x48:rate=25:duration=1.2",
    "-map",
    "0:v",
    "-map",
    "1:a",
    "-map",
    "2:v",
    "-pix_fmt",
    "yuv420p",
    "-c:v:0",
    "libx264",
    "-preset",
    "ultrafast",
    "-bf",
    "2",
    "-g",
    "10",
    "-c:v:1",
    "libx265",
    "-x265-params",
    "log-level=error:bframes=2:keyint=10:min-keyint=10:scenecut=0",
    "-c:a",
    "aac",
    "-f",
    "mpegts",
    file,
  ]);
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("MPEG-TS with several video streams: each is a track, as in MP4 and Matroska", () => {
  it("every H.264/HEVC stream is indexed in PMT order, equal to ffprobe's packets of v:0 and v:1", async () => {
    const { index } = await indexLocalFile(file, "two.ts");
    expect(index.video).toMatchObject({ codec: "h264", width: 96, height: 64 });
    expect(index.moreVideo).toHaveLength(1);
    const second = index.moreVideo![0]!;
    expect(second).toMatchObject({ codec: "hevc", width: 80, height: 48 });
    expect(second.mpegts!.pid).not.toBe(index.video!.mpegts!.pid);
    for (const [track, stream] of [
      [index.video!, 0],
      [second, 1],
    ] as const) {
      const packets = await probePackets(file, stream);
      expect(Array.from(track.samples.offset)).toEqual(packets.map((p) => p.pos));
      expect(Array.from(track.samples.pts)).toEqual(packets.map((p) => p.pts));
      expect(Array.from(track.samples.dts)).toEqual(packets.map((p) => p.dts));
      expect(Array.from(track.samples.keyframe, (k) => k === 1)).toEqual(packets.map((p) => p.keyframe));
    }
  });

  it.each([0, 1])("track: %i streams that video stream, every frame md5-equal to ffmpeg -map 0:v:N", async (track) => {
    const md5s = await ffmpegFrameMd5s(file, { stream: track });
    const errors: SdkError[] = [];
    const ds = await open(join(dir, "ds"), {
      device: "cpu",
      format: "native",
      frames: 1,
      hop: 1,
      align: "exact",
      track,
      onError: (e) => errors.push(e),
    });
    let frames = 0;
    for await (const b of ds) {
      frames += expectFramesMatch(b, () => md5s);
      expect(b.clips.every((c) => c.source?.width === (track === 0 ? 96 : 80))).toBe(true);
    }
    await ds.close();
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(frames).toBe(md5s.length);
  });

  it("track: 2 is ERR_TRACK_NOT_FOUND", async () => {
    await expect(open(join(dir, "ds"), { device: "cpu", track: 2 })).rejects.toMatchObject({
      code: "ERR_TRACK_NOT_FOUND",
      message: expect.stringMatching(/^two\.ts has 2 video tracks but track 2 \(0-based\) was asked for/),
    });
  });
});
