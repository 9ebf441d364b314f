/**
 * A video track in a codec ec does not decode is named as ffprobe names it (ERR_UNSUPPORTED_CODEC),
 * never reported as "no video track"; VP8 (web-scraped WebM) is indexed like VP9.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { vint } from "../../../common/media-index/ebml.js";
import { buildIndex, bytesReader } from "../../../common/media-index/index.js";
import { concat, ebml, webmHead } from "../../helpers/hostile-media.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { probePackets } from "../../helpers/make-video.js";

const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-codec-names-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ffmpeg encodes 20 frames of testsrc2 with `codec` into `name`. */
async function encode(name: string, codec: string[]): Promise<string> {
  const file = join(dir, name);
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=96x64:r=25"],
    ...["-frames:v", "20", ...codec, file],
  ]);
  return file;
}

describe("codecs ec does not decode are named; VP8 is indexed", () => {
  it("a VP8 WebM indexes as vp8, its samples equal ffprobe's packets", async () => {
    const file = await encode("vp8.webm", ["-c:v", "libvpx", "-g", "8", "-b:v", "300k"]);
    const { index } = await indexLocalFile(file, "vp8.webm");
    expect(index.kind).toBe("video");
    expect(index.video).toMatchObject({ codec: "vp8", codecString: "vp8", width: 96, height: 64, frameCount: 20 });
    const bytes = new Uint8Array(await readFile(file));
    const packets = await probePackets(file);
    const s = index.video!.samples;
    // ffprobe's pos is the block's track number; the index keeps where the frame starts, 4 bytes on.
    expect(Array.from(s.offset)).toEqual(packets.map((p) => p.pos + vint(bytes, p.pos)!.length + 3));
    expect(Array.from(s.size)).toEqual(packets.map((p) => p.size));
    expect(Array.from(s.keyframe, (k) => k === 1)).toEqual(packets.map((p) => p.keyframe));
  });

  it("a Matroska video track of another codec is ERR_UNSUPPORTED_CODEC naming its CodecID", async () => {
    const cluster = ebml(0x1f43b675, ebml(0xe7, Uint8Array.of(0)));
    const bytes = concat([webmHead("V_THEORA"), cluster]);
    const index = await buildIndex(bytesReader(bytes), { key: "t.webm", etag: "x" });
    expect(index.error).toEqual({
      code: "ERR_UNSUPPORTED_CODEC",
      message: 'video codec "V_THEORA" is not one of h264, hevc, av1, vp8, vp9',
    });
  });

  it.each([
    ["mpeg2video", "m2v.mp4", ["-c:v", "mpeg2video"], /video codec mpeg2video \(sample entry mp4v, object type 0x61\)/],
    ["mpeg4", "m4v.mp4", ["-c:v", "mpeg4"], /video codec mpeg4 \(sample entry mp4v, object type 0x20\)/],
    ["mpeg2video in MPEG-TS", "m2v.ts", ["-c:v", "mpeg2video"], /stream type 0x2 \(mpeg2video\)/],
  ])("%s is ERR_UNSUPPORTED_CODEC named as ffprobe names it", async (_name, file, codec, message) => {
    const path = await encode(file, codec);
    const { index } = await indexLocalFile(path, file);
    expect(index.error?.code).toBe("ERR_UNSUPPORTED_CODEC");
    expect(index.error?.message).toMatch(message);
  });
});
