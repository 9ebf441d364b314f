import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createDecoder, NativeError, packetsFromTrack, type Decoder, type Packets } from "../../native/index.js";
import { codeOf, indexedVideo, type IndexedVideo } from "./helpers.js";

let dir: string;
let h264: IndexedVideo;
let hevc: IndexedVideo;
let decoder: Decoder;

function allPackets(v: IndexedVideo): Packets {
  return packetsFromTrack(v.track, v.bytes, 0, 0, v.track.samples.size.length);
}

async function openFor(v: IndexedVideo, extradata = v.track.extradata): Promise<Decoder> {
  const t = v.track;
  return createDecoder({ codec: t.codec, extradata, width: t.width, height: t.height, threads: 1 });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-bad-"));
  h264 = await indexedVideo(dir, { codec: "h264", width: 128, height: 80, frames: 24, bframes: 2, gop: 12 });
  hevc = await indexedVideo(dir, { codec: "hevc", width: 128, height: 80, frames: 12, gop: 12 });
  decoder = await openFor(h264);
});
afterAll(async () => {
  await decoder?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("bad input gives a typed NativeError, and the decoder stays usable", () => {
  it("an unsupported codec is rejected before the addon is called", async () => {
    const t = h264.track;
    await expect(
      codeOf(createDecoder({ codec: "mpeg2" as "h264", extradata: t.extradata, width: 16, height: 16 })),
    ).resolves.toBe("ERR_INVALID_ARGUMENT");
    await expect(createDecoder({ codec: "h264", extradata: t.extradata, width: -3, height: 16 })).rejects.toThrow(
      "Expected an integer in 1..16384 for width but received -3",
    );
  });

  it("wrong extradata: another codec's record or garbage", async () => {
    await expect(codeOf(openFor(h264, hevc.track.extradata))).resolves.toMatch(/^ERR_(BAD_EXTRADATA|DECODER_OPEN)$/);
    await expect(codeOf(openFor(h264, new Uint8Array([1, 2, 3])))).resolves.toBe("ERR_BAD_EXTRADATA");
    await expect(codeOf(openFor(hevc, new Uint8Array(40).fill(7)))).resolves.toBe("ERR_BAD_EXTRADATA");
  });

  it("a truncated range: samples past the end of the data", async () => {
    const p = allPackets(h264);
    const end = Math.max(...p.samples.map((s) => s.offset + s.size));
    const cut = { data: p.data.subarray(0, end - 100), samples: p.samples };
    await expect(codeOf(decoder.decode(cut))).resolves.toBe("ERR_PACKET_OUT_OF_RANGE");
  });

  it("reordered packets", async () => {
    const p = allPackets(h264);
    const samples = [...p.samples];
    [samples[3], samples[4]] = [samples[4]!, samples[3]!];
    await expect(codeOf(decoder.decode({ data: p.data, samples }))).resolves.toBe("ERR_PACKET_ORDER");
  });

  it("a clip that does not start at a keyframe", async () => {
    const p = allPackets(h264);
    await expect(codeOf(decoder.decode({ data: p.data, samples: p.samples.slice(1) }))).resolves.toBe(
      "ERR_NO_KEYFRAME",
    );
  });

  it("packets of garbage bytes", async () => {
    const p = allPackets(h264);
    const data = new Uint8Array(p.data.length).fill(0xff);
    await expect(codeOf(decoder.decode({ data, samples: p.samples }))).resolves.toMatch(/^ERR_CORRUPT_(PACKET|FRAME)$/);
  });

  it("truncated samples (each cut to a third)", async () => {
    const p = allPackets(h264);
    const samples = p.samples.map((s) => ({ ...s, size: Math.max(1, Math.floor(s.size / 3)) }));
    await expect(codeOf(decoder.decode({ data: p.data, samples }))).resolves.toMatch(/^ERR_CORRUPT_(PACKET|FRAME)$/);
  });

  it("after all that, the same decoder still decodes the clip exactly", async () => {
    const frames = await decoder.decode(allPackets(h264));
    expect(frames).toHaveLength(24);
  });

  it.each([
    ["h264", () => h264, 150],
    ["hevc", () => hevc, 60],
  ] as const)(
    "fuzz %s: byte flips and truncations never crash or hang, only resolve or reject with a code",
    async (_codec, video, runs) => {
      const v = video();
      const p = allPackets(v);
      const fuzzDecoder = await openFor(v);
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ at: fc.nat(p.data.length - 1), value: fc.integer({ min: 0, max: 255 }) }), {
            minLength: 1,
            maxLength: 40,
          }),
          fc.nat(p.samples.length - 1),
          fc.float({ min: 0, max: 1, noNaN: true }),
          async (flips, cutSample, keep) => {
            const data = p.data.slice();
            for (const f of flips) data[f.at] = f.value;
            const samples = p.samples.map((s, i) => (i === cutSample ? { ...s, size: Math.floor(s.size * keep) } : s));
            try {
              const frames = await fuzzDecoder.decode({ data, samples });
              expect(frames.length).toBeLessThanOrEqual(p.samples.length + 1);
            } catch (error) {
              expect(error).toBeInstanceOf(NativeError);
              expect((error as NativeError).code).toMatch(/^ERR_[A-Z_]+$/);
            }
          },
        ),
        { numRuns: runs, seed: 4 },
      );
      // The fuzzed decoder was reset after every clip: a clean clip still decodes fully.
      await expect(fuzzDecoder.decode(p)).resolves.toHaveLength(v.track.samples.size.length);
      await fuzzDecoder.close();
    },
  );

  it("a closed decoder rejects with ERR_DECODER_CLOSED", async () => {
    const d = await openFor(h264);
    await d.close();
    await expect(codeOf(d.decode(allPackets(h264)))).resolves.toBe("ERR_DECODER_CLOSED");
  });
});
