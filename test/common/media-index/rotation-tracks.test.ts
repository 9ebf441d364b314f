import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeIndex, encodeIndex } from "../../../common/media-index/index.js";
import type { VideoTrackV1 } from "../../../common/schema/index.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { makeRotatedMov, makeVideo, probePackets, probeRotation } from "../../helpers/make-video.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-rotation-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const indexOf = async (file: string) => (await indexLocalFile(file, "phone.mov")).index;

async function expectPackets(track: VideoTrackV1, file: string, stream: number) {
  const packets = await probePackets(file, stream);
  expect(Array.from(track.samples.offset)).toEqual(packets.map((p) => p.pos));
  expect(Array.from(track.samples.size)).toEqual(packets.map((p) => p.size));
  expect(Array.from(track.samples.pts)).toEqual(packets.map((p) => p.pts));
}

describe("rotation and several video tracks (a phone-style MOV with audio)", () => {
  it.each([90, 180, 270])("rotate tag %i: the index's rotation is what ffprobe reports, clockwise", async (tag) => {
    const file = await makeRotatedMov(dir, { rotate: tag, width: 96, height: 64, frames: 20 });
    const index = await indexOf(file);
    expect(index.error).toBeUndefined();
    const rotation = await probeRotation(file);
    expect(rotation).not.toBe(0);
    expect(index.video!.rotation).toBe(rotation);
    // Dimensions stay as coded; the second video track has no matrix.
    expect([index.video!.width, index.video!.height]).toEqual([96, 64]);
    expect(index.moreVideo!.map((t) => [t.width, t.height, t.rotation])).toEqual([[48, 32, 0]]);
    expect(decodeIndex(encodeIndex(index)).video!.rotation).toBe(rotation);
  });

  it("every video track is indexed, equal to ffprobe's packets of v:0 and v:1; the audio track is not", async () => {
    const file = await makeRotatedMov(dir, { rotate: 90, width: 96, height: 64, frames: 20 });
    const index = await indexOf(file);
    expect(index.moreVideo).toHaveLength(1);
    await expectPackets(index.video!, file, 0);
    await expectPackets(index.moreVideo![0]!, file, 1);
    const back = decodeIndex(encodeIndex(index));
    expect(back.moreVideo).toHaveLength(1);
    expect(Array.from(back.moreVideo![0]!.samples.offset)).toEqual(Array.from(index.moreVideo![0]!.samples.offset));
    expect(Array.from(back.moreVideo![0]!.extradata)).toEqual(Array.from(index.moreVideo![0]!.extradata));
    expect(Array.from(back.video!.samples.size)).toEqual(Array.from(index.video!.samples.size));
  });

  it("a file without a matrix has rotation 0 and no further tracks", async () => {
    const index = await indexOf(
      await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 10, audio: true }),
    );
    expect(index.video!.rotation).toBe(0);
    expect(index.moreVideo).toBeUndefined();
  });
});
