import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { frameMd5, type HostFrame } from "../../native/index.js";
import { ffmpegFrameMd5s, indexedVideo, type IndexedVideo, decoderFor, packetsPart } from "./helpers.js";

let dir: string;
let v: IndexedVideo;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-run-"));
  v = await indexedVideo(dir, {
    codec: "h264",
    width: 96,
    height: 64,
    frames: 48,
    bframes: 3,
    gop: 24,
    name: "run.mp4",
  });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const part = (first: number, count: number) => packetsPart(v, first, count);

describe("decode with drain: false continues one run across calls", () => {
  it("gives ffmpeg's frames, each decoded once, when a GOP is fed in pieces that start between keyframes", async () => {
    const decoder = await decoderFor(v, { threads: 1 });
    const cuts = [0, 5, 11, 30, 31, 48];
    const frames: HostFrame[] = [];
    let decoded = 0;
    for (let i = 0; i + 1 < cuts.length; i++) {
      const drain = i + 2 === cuts.length;
      const out = await decoder.decodeRun(part(cuts[i]!, cuts[i + 1]! - cuts[i]!), { drain });
      frames.push(...(out.frames as HostFrame[]));
      decoded += out.decoded;
    }
    expect(decoded).toBe(48);
    expect(frames.map(frameMd5)).toEqual(await ffmpegFrameMd5s(v.file));
    // Drained: the next call is a fresh clip again, and must open with a keyframe.
    await expect(decoder.decodeRun(part(5, 4))).rejects.toMatchObject({ code: "ERR_NO_KEYFRAME" });
    await decoder.close();
  });

  it("stops feeding once the frame at `until` is out: the packets left go in with the next call", async () => {
    const t = v.track;
    const sorted = t.samples.pts.slice(0, 24).sort((a, b) => a - b);
    const reference = await ffmpegFrameMd5s(v.file);
    const decoder = await decoderFor(v, { threads: 1 });
    // The first 10 frames wanted, 20 packets offered (as a run offers reorder slack past a clip).
    const first = await decoder.decodeRun(part(0, 20), { drain: false, until: sorted[9]! });
    const firstPts = (first.frames as HostFrame[]).map((f) => f.pts);
    expect(firstPts.at(-1)).toBe(sorted[9]);
    expect(first.fed).toBeLessThan(20);
    expect(first.decoded).toBeLessThanOrEqual(first.fed);
    // The run goes on from the first packet not fed, to the end: ffmpeg's frames, each decoded once.
    const rest = await decoder.decodeRun(part(first.fed, 48 - first.fed), { drain: true });
    expect(rest.fed).toBe(48 - first.fed);
    expect(first.decoded + rest.decoded).toBe(48);
    expect([...(first.frames as HostFrame[]), ...(rest.frames as HostFrame[])].map(frameMd5)).toEqual(reference);
    await expect(decoder.decodeRun(part(0, 4), { drain: true, until: 0 })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
      message: "Expected drain: false with until for drain but received true",
    });
    await decoder.close();
  });

  it("counts the frames it dropped before dropBefore among those it decoded", async () => {
    const t = v.track;
    const decoder = await decoderFor(v, { threads: 1 });
    const dropBefore = t.samples.pts.slice(0, 24).sort((a, b) => a - b)[20]!;
    const out = await decoder.decodeRun(part(0, 24), { dropBefore });
    expect(out.decoded).toBe(24);
    expect(out.frames).toHaveLength(4);
    await decoder.close();
  });
});
