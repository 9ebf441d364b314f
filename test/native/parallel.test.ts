import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { frameMd5, packetsFromTrack, type HostFrame } from "../../native/index.js";
import { indexedVideo, type IndexedVideo, decoderFor } from "./helpers.js";

let dir: string;
let video: IndexedVideo;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-par-"));
  video = await indexedVideo(dir, { codec: "h264", width: 160, height: 96, frames: 24, bframes: 2 });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const open = () => {
  return decoderFor(video, { threads: 1 });
};
const packets = () => packetsFromTrack(video.track, video.bytes, 0, 0, video.track.samples.size.length);

describe("decoding off the event loop", () => {
  it("decode() returns a pending promise and the event loop keeps turning meanwhile", async () => {
    const decoder = await open();
    let settled = false;
    // Three queued clips: the last can only settle after several event-loop turns, so a
    // macrotask that runs first proves the work is not on this thread.
    decoder.decode(packets());
    decoder.decode(packets());
    const p = decoder.decode(packets()).then((f) => {
      settled = true;
      return f;
    });
    await new Promise((r) => setImmediate(r));
    const tickedWhilePending = !settled;
    await p;
    expect(tickedWhilePending).toBe(true);
    await decoder.close();
  });

  it("several decoders in parallel give the same frames as one alone", async () => {
    const solo = await open();
    const expected = ((await solo.decode(packets())) as HostFrame[]).map(frameMd5);
    const decoders = await Promise.all([open(), open(), open(), open()]);
    const results = await Promise.all(decoders.map((dec) => dec.decode(packets())));
    for (const frames of results) expect((frames as HostFrame[]).map(frameMd5)).toEqual(expected);
    await Promise.all([solo, ...decoders].map((dec) => dec.close()));
  });

  it("overlapping calls on one decoder are queued, not interleaved", async () => {
    const decoder = await open();
    const [a, b, c] = await Promise.all([
      decoder.decode(packets()),
      decoder.decode(packets()),
      decoder.decode(packets()),
    ]);
    const md5 = (f: unknown) => (f as HostFrame[]).map(frameMd5);
    expect(md5(a)).toHaveLength(24);
    expect(md5(b)).toEqual(md5(a));
    expect(md5(c)).toEqual(md5(a));
    await decoder.close();
  });
});
