/**
 * 1920x1080 H.264 is coded as 1088 rows and cropped. Native output decodes in place at the
 * coded height and moves only the chroma planes up over the 8 cropped rows once the decoder is
 * done with a frame (a third of a 1080p frame), instead of copying the whole frame out of
 * libavcodec's buffer: the frames stay ffmpeg's, byte for byte, and `copied` says what moved.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { frameMd5, packetsFromTrack, type HostFrame } from "../../native/index.js";
import { decoderFor, ffmpegFrameMd5s, indexedVideo, packetsPart, type IndexedVideo } from "./helpers.js";

const FRAMES = 10;
const FRAME_BYTES = 1920 * 1080 * 1.5;
const CHROMA_BYTES = 2 * 960 * 540; // what moves per frame: both chroma planes

let dir: string;
let video: IndexedVideo;
let expected: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-coded-height-"));
  video = await indexedVideo(dir, { codec: "h264", width: 1920, height: 1080, frames: FRAMES, bframes: 2, gop: 5 });
  expected = await ffmpegFrameMd5s(video.file);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const whole = () => packetsFromTrack(video.track, video.bytes, 0, 0, video.track.samples.size.length);

describe("1080p native output decoded at its coded height", () => {
  it.each([1, 2])("moves only the chroma planes of each frame (threads: %i)", async (threads) => {
    const decoder = await decoderFor(video, { threads });
    const run = await decoder.decodeRun(whole());
    const frames = run.frames as HostFrame[];
    // Consumers write into frames in place: a later call neither reuses nor reads them.
    for (const f of frames) f.data.fill(7);
    const again = (await decoder.decode(whole())) as HostFrame[];
    await decoder.close();
    expect(frames.length).toBe(FRAMES);
    // Before: every frame copied whole into one batch buffer (31,104,000 bytes for 10 frames).
    expect(run.copied).toBe(FRAMES * CHROMA_BYTES);
    // One buffer for the call's frames (one per frame made V8 collect every 64 MB of them).
    expect(new Set(frames.map((f) => f.data.buffer)).size).toBe(1);
    expect(frames.every((f) => f.data.byteLength === FRAME_BYTES)).toBe(true);
    expect(again.map(frameMd5)).toEqual(expected);
    const sevens = Buffer.alloc(FRAME_BYTES, 7);
    expect(frames.every((f) => sevens.equals(f.data as Uint8Array))).toBe(true);
  });

  it("copies the frames the codec still references when a run goes on (drain: false)", async () => {
    const decoder = await decoderFor(video, { threads: 1 });
    const first = await decoder.decodeRun(packetsPart(video, 0, 6), { drain: false });
    const rest = await decoder.decodeRun(packetsPart(video, 6, FRAMES - 6));
    await decoder.close();
    const frames = [...first.frames, ...rest.frames] as HostFrame[];
    expect(frames.map(frameMd5)).toEqual(expected);
    // Frames held as references past the first call are copied whole, the rest moved.
    expect(first.copied).toBeGreaterThan(first.frames.length * CHROMA_BYTES);
    expect(first.copied).toBeLessThanOrEqual(first.frames.length * FRAME_BYTES);
    expect(rest.copied).toBe(rest.frames.length * CHROMA_BYTES);
  });

  it("keeps ffmpeg's frames when references are dropped (dropBefore)", async () => {
    const decoder = await decoderFor(video, { threads: 2 });
    const kept = await decoder.decodeRun(whole(), { dropBefore: video.track.samples.pts[5]! });
    await decoder.close();
    const frames = kept.frames as HostFrame[];
    expect(frames.map(frameMd5)).toEqual(expected.slice(FRAMES - frames.length));
    expect(kept.copied).toBe(frames.length * CHROMA_BYTES);
    // The kept frames share the call's arena; the dropped ones were never in it.
    expect(new Set(frames.map((f) => f.data.buffer)).size).toBe(1);
    expect(frames[0]!.data.buffer.byteLength).toBeLessThan((frames.length + 1) * (FRAME_BYTES + 1920 * 8 * 1.5 + 128));
  });
});
