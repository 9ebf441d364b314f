import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { vint } from "../../../common/media-index/ebml.js";
import { open } from "../../../sdk/index.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { makeMatroska, withProjectionRoll } from "../../helpers/make-matroska.js";
import { probePackets } from "../../helpers/make-video.js";

let dir: string;
let plain: Uint8Array;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-mkv-rotation-"));
  plain = new Uint8Array(
    await readFile(await makeMatroska(dir, { codec: "h264", frames: 24, gop: 8, live: true, name: "plain.mkv" })),
  );
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function patched(name: string, roll: number, extra: { yaw?: number } = {}): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, withProjectionRoll(plain, roll, extra));
  return file;
}

describe("Matroska rotation: Tracks > Video > Projection's ProjectionPoseRoll, as MP4's display matrix", () => {
  it.each([
    [-90, 90],
    [90, 270],
    [180, 180],
    [-180, 180],
    [270, 90],
    [0, 0],
    [45, 0],
  ])("ProjectionPoseRoll %f (counter-clockwise) is rotation %i (clockwise)", async (roll, rotation) => {
    const file = await patched(`roll${roll}.mkv`, roll);
    expect((await indexLocalFile(file, "a.mkv")).index.video!.rotation).toBe(rotation);
  });

  it("a yaw (a mirrored pose) is no turn: rotation 0, as ffmpeg does not turn it either", async () => {
    const file = await patched("yaw.mkv", -90, { yaw: 180 });
    expect((await indexLocalFile(file, "a.mkv")).index.video!.rotation).toBe(0);
  });

  it("no Projection: rotation 0; the patched file's samples still equal ffprobe's", async () => {
    await writeFile(join(dir, "plain.mkv"), plain);
    expect((await indexLocalFile(join(dir, "plain.mkv"), "a.mkv")).index.video!.rotation).toBe(0);
    const file = await patched("check.mkv", -90);
    const bytes = new Uint8Array(await readFile(file));
    const p = await probePackets(file);
    const s = (await indexLocalFile(file, "a.mkv")).index.video!.samples;
    expect(Array.from(s.offset)).toEqual(p.map((x) => x.pos + vint(bytes, x.pos)!.length + 3));
    expect(Array.from(s.pts)).toEqual(p.map((x) => x.pts));
  });

  it("streams report it in ClipInfo.rotation; frames come as coded, equal to ffmpeg's; rotate auto turns them", async () => {
    const only = join(dir, "stream");
    await mkdir(only);
    const file = join(only, "r.mkv");
    await writeFile(file, withProjectionRoll(plain, -90));
    const md5s = await ffmpegFrameMd5s(file, { autorotate: false });
    const ds = await open(only, { device: "cpu", format: "native", frames: 4, align: "keyframe" });
    let frames = 0;
    for await (const b of ds) {
      frames += expectFramesMatch(b, () => md5s);
      expect(b.clips.every((c) => c.rotation === 90)).toBe(true);
    }
    await ds.close();
    expect(frames).toBeGreaterThan(0);
    const turned = await open(only, { device: "cpu", frames: 4, align: "keyframe", rotate: "auto" });
    for await (const b of turned) expect(b.decoded[0]!.frames[0]).toMatchObject({ width: 64, height: 96 });
    await turned.close();
  });
});
