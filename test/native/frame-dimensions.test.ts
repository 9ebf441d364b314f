/**
 * The decoder holds the stream to the index's dimensions: its max_pixels is the index's size
 * (padded), so an SPS that declares 16000x16000 (384 MB a picture) fails before a picture is allocated, and a frame
 * of any other size than the index's is ERR_FRAME_DIMENSIONS. A clip of such an object is skipped
 * and reported by key; the stream goes on.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packetsFromTrack, type HostFrame } from "../../native/index.js";
import { open } from "../../sdk/index.js";
import type { SdkError } from "../../sdk/errors.js";
import { makeVideo } from "../helpers/make-video.js";
import { resizeAvcC } from "../helpers/sps-patch.js";
import { codeOf, decoderFor, indexedVideo } from "./helpers.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-dims-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a stream's own dimensions are bounded by the index's", () => {
  it("an SPS declaring 16000x16000 behind an index of 64x64 is ERR_FRAME_DIMENSIONS, nothing allocated", async () => {
    const v = await indexedVideo(dir, { codec: "h264", width: 64, height: 64, frames: 4, name: "small.mp4" });
    const t = v.track;
    const huge = { ...t, extradata: resizeAvcC(t.extradata, 16000, 16000) };
    for (const threads of [1, 2]) {
      const decoder = await decoderFor({ track: huge }, { threads });
      const error = await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.frameCount)).then(
        () => undefined,
        (e: { code: string; message: string }) => e,
      );
      expect(error?.code, `threads ${threads}`).toBe("ERR_FRAME_DIMENSIONS");
      expect(error?.message).toMatch(
        /declares 16000x16000 where the index says 64x64 \(at most 16384 pixels are decoded\)/,
      );
      await decoder.close();
    }
  });

  it("a 48x48 stream whose index says 64x64 is ERR_FRAME_DIMENSIONS, then the decoder goes on", async () => {
    const v = await indexedVideo(dir, { codec: "h264", width: 48, height: 48, frames: 4, name: "s48.mp4" });
    const t = v.track;
    const decoder = await decoderFor({ track: { ...t, width: 64, height: 64 } }, { threads: 1 });
    const code = await codeOf(decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.frameCount)));
    await decoder.close();
    expect(code).toBe("ERR_FRAME_DIMENSIONS");
    const right = await decoderFor(v, { threads: 1 });
    const frames = (await right.decode(packetsFromTrack(t, v.bytes, 0, 0, t.frameCount))) as HostFrame[];
    await right.close();
    expect(frames.map((f) => [f.width, f.height])).toEqual(Array(4).fill([48, 48]));
  });

  it("open(): an object whose MP4 says another size than its stream is skipped and reported by key", async () => {
    const data = join(dir, "dataset");
    await mkdir(data);
    const good = await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 16, name: "good.mp4" });
    const bad = new Uint8Array(await readFile(good));
    // The avc1 sample entry's width (28 bytes past its type) says 80 where the SPS says 64.
    const at = Buffer.from(bad).indexOf("avc1", Buffer.from(bad).indexOf("stsd"));
    expect((bad[at + 28]! << 8) | bad[at + 29]!).toBe(64);
    bad[at + 29] = 80;
    await writeFile(join(data, "a-good.mp4"), await readFile(good));
    await writeFile(join(data, "b-wide.mp4"), bad);
    const errors: SdkError[] = [];
    const ds = await open(data, { frames: 8, device: "cpu", shuffle: false, onError: (e) => errors.push(e) });
    const keys: string[] = [];
    for await (const b of ds) keys.push(...b.clips.map((c) => c.key));
    expect(keys).toEqual(["a-good.mp4", "a-good.mp4"]);
    expect(errors.map((e) => e.code)).toEqual(["ERR_FRAME_DIMENSIONS", "ERR_FRAME_DIMENSIONS"]);
    expect(errors.every((e) => e.message.startsWith("b-wide.mp4:"))).toBe(true);
    expect(errors[0]!.message).toMatch(/A decoded frame is 64x48 but the index says 80x48/);
  });
});
