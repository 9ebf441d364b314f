/**
 * decode({ into }): kept frames are written straight into caller memory (a batch buffer's
 * regions) and their `data` views it; frames stay equal to ffmpeg's framemd5.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { frameBytes, frameMd5, type HostFrame } from "../../native/index.js";
import { decoderFor, ffmpegFrameMd5s, indexedVideo, packetsPart, type IndexedVideo } from "./helpers.js";

let dir: string;
let v: IndexedVideo;
let md5s: string[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-into-"));
  v = await indexedVideo(dir, {
    codec: "h264",
    width: 96,
    height: 64,
    frames: 24,
    bframes: 2,
    gop: 12,
    name: "into.mp4",
  });
  md5s = await ffmpegFrameMd5s(v.file);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

const part = (first: number, count: number) => packetsPart(v, first, count);

/** Presentation-ordered pts of the track. */
const ptsInOrder = () => [...v.track.samples.pts].sort((a, b) => a - b);

const decoder = (output: "native" | "rgb24" = "native") => decoderFor(v, { threads: 1, output });

describe("decode into caller memory", () => {
  it("writes native frames at their regions of one buffer, frame-exact", async () => {
    const d = await decoder();
    const frameSize = 96 * 64 * 1.5;
    const pts = ptsInOrder();
    // Regions in reverse order, so the buffer's layout is the caller's, not the decoder's.
    const buffer = new ArrayBuffer(frameSize * pts.length);
    const into = new Map(pts.map((p, i) => [p, new Uint8Array(buffer, (pts.length - 1 - i) * frameSize, frameSize)]));
    const frames = (await d.decode(part(0, 24), { into })) as HostFrame[];
    expect(frames.map(frameMd5)).toEqual(md5s);
    frames.forEach((f, i) => {
      expect(f.data.buffer).toBe(buffer);
      expect(f.data.byteOffset).toBe((pts.length - 1 - i) * frameSize);
      expect(md5(new Uint8Array(buffer, (pts.length - 1 - i) * frameSize, frameSize))).toBe(md5s[i]);
    });
    await d.close();
  });

  it("writes rgb24 frames into regions with the same pixels as without, and falls back where a region does not fit", async () => {
    const d = await decoder("rgb24");
    const plain = (await d.decode(part(0, 12))) as HostFrame[];
    const frameSize = 96 * 64 * 3;
    const pts = ptsInOrder().slice(0, 12);
    const buffer = new ArrayBuffer(frameSize * 12);
    const into = new Map(pts.map((p, i) => [p, new Uint8Array(buffer, i * frameSize, frameSize)]));
    // One region too small: that frame lands in the call's own memory, the others in theirs.
    into.set(pts[5]!, new Uint8Array(buffer, 5 * frameSize, frameSize - 3));
    const frames = (await d.decode(part(0, 12), { into })) as HostFrame[];
    expect(frames.map((f) => md5(frameBytes(f)))).toEqual(plain.map((f) => md5(frameBytes(f))));
    frames.forEach((f, i) => expect(f.data.buffer === buffer, `frame ${i}`).toBe(i !== 5));
    await d.close();
  });

  it("writes frames of a run fed in pieces where they belong, whichever call yields them", async () => {
    const d = await decoder();
    const frameSize = 96 * 64 * 1.5;
    const pts = ptsInOrder();
    const buffer = new ArrayBuffer(frameSize * pts.length);
    const into = new Map(pts.map((p, i) => [p, new Uint8Array(buffer, i * frameSize, frameSize)]));
    const frames: HostFrame[] = [];
    const cuts = [0, 5, 13, 24];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const out = await d.decodeRun(part(cuts[i]!, cuts[i + 1]! - cuts[i]!), { drain: i + 2 === cuts.length, into });
      frames.push(...(out.frames as HostFrame[]));
    }
    expect(frames.map(frameMd5)).toEqual(md5s);
    expect(frames.every((f) => f.data.buffer === buffer)).toBe(true);
    expect(md5(new Uint8Array(buffer, 23 * frameSize, frameSize))).toBe(md5s[23]);
    await d.close();
  });

  it("rejects an into that is not a Map of pts to Uint8Array", async () => {
    const d = await decoder();
    const bad = new Map([[0, new ArrayBuffer(8) as unknown as Uint8Array]]);
    await expect(d.decode(part(0, 12), { into: bad })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
      message: expect.stringMatching(/^Expected a Uint8Array region for into\[0\] but received/),
    });
    await expect(d.decode(part(0, 12), { into: [] as unknown as Map<number, Uint8Array> })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
    });
    await d.close();
  });
});
