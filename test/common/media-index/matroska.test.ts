import { readFile, mkdtemp, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeIndex, encodeIndex } from "../../../common/media-index/index.js";
import { vint } from "../../../common/media-index/ebml.js";
import type { IndexV1 } from "../../../common/schema/index.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { makeMatroska, type MatroskaOptions } from "../../helpers/make-matroska.js";
import { probePackets } from "../../helpers/make-video.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-mkv-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const indexOf = (file: string) => indexLocalFile(file, file.slice(dir.length + 1));

/**
 * ffprobe's pos is where the (Simple)Block's data starts, at its track number; the index keeps
 * where the frame's bytes start, past that number, the 16-bit timestamp and the flags.
 */
function framePosition(bytes: Uint8Array, pos: number): number {
  return pos + vint(bytes, pos)!.length + 3;
}

async function expectMatchesFfprobe(file: string, index: IndexV1, packets = probePackets(file)) {
  const bytes = new Uint8Array(await readFile(file));
  const p = await packets;
  const s = index.video!.samples;
  expect(Array.from(s.offset)).toEqual(p.map((x) => framePosition(bytes, x.pos)));
  expect(Array.from(s.size)).toEqual(p.map((x) => x.size));
  expect(Array.from(s.keyframe, (k) => k === 1)).toEqual(p.map((x) => x.keyframe));
  expect(Array.from(s.pts)).toEqual(p.map((x) => x.pts));
}

describe("Matroska and WebM samples equal ffprobe -show_packets (pos, size, flags, pts)", () => {
  const cases: [string, MatroskaOptions, string][] = [
    ["h264 with B-frames (.mkv, Cues at the end)", { codec: "h264", frames: 40, name: "h264.mkv" }, "h264"],
    [
      "h264 without Cues, Segment of unknown size (-live 1)",
      { codec: "h264", frames: 40, live: true, name: "live.mkv" },
      "h264",
    ],
    ["hevc with B-frames in .mkv", { codec: "hevc", frames: 40, name: "hevc.mkv" }, "hevc"],
    ["vp9 in .webm", { codec: "vp9", frames: 40, name: "vp9.webm" }, "vp9"],
    ["vp9 in .webm without Cues", { codec: "vp9", frames: 40, live: true, name: "vp9-live.webm" }, "vp9"],
    ["av1 in .webm", { codec: "av1", frames: 30, name: "av1.webm" }, "av1"],
    ["h264 with an interleaved Opus track", { codec: "h264", frames: 40, audio: true, name: "audio.mkv" }, "h264"],
  ];
  it.each(cases)(
    "%s",
    async (_name, o, codec) => {
      const file = await makeMatroska(dir, o);
      const { index, requests } = await indexOf(file);
      expect(index.error).toBeUndefined();
      expect(index.video).toMatchObject({
        codec,
        width: 96,
        height: 64,
        frameCount: o.frames,
        timescale: 1000,
        rotation: 0,
      });
      expect(index.video!.fps).toBeCloseTo(25, 6);
      expect(Math.abs(index.video!.duration - o.frames / 25)).toBeLessThan(0.05);
      if (codec !== "vp9") expect(index.video!.extradata.length).toBeGreaterThan(0);
      await expectMatchesFfprobe(file, index);
      // A small file is its head read and nothing more.
      expect(requests).toHaveLength(1);
      const back = decodeIndex(encodeIndex(index));
      expect(Array.from(back.video!.samples.offset)).toEqual(Array.from(index.video!.samples.offset));
    },
    30_000,
  );

  it("range reads are bounded: a 4 MiB window per request, with or without Cues", async () => {
    for (const live of [false, true]) {
      const file = await makeMatroska(dir, {
        codec: "h264",
        lossless: true,
        width: 320,
        height: 240,
        frames: 100,
        gop: 25,
        live,
        name: `big-${live}.mkv`,
      });
      const { size } = await stat(file);
      expect(size).toBeGreaterThan(8 << 20);
      const { index, requests } = await indexOf(file);
      expect(index.video!.frameCount).toBe(100);
      const bytes = requests.reduce((a, r) => a + r.length, 0);
      // The head, then one window per 4 MiB of clusters (a window restarts at a block header).
      expect(requests.length).toBeLessThanOrEqual(Math.ceil(size / (4 << 20)) + 2);
      expect(bytes).toBeLessThanOrEqual(size + (4 << 20) + (64 << 10));
      await expectMatchesFfprobe(file, index);
    }
  }, 60_000);

  it("a live recording cut off mid-block is indexed up to its last whole block", async () => {
    const file = await makeMatroska(dir, { codec: "h264", frames: 40, live: true, name: "cut.mkv" });
    const packets = await probePackets(file);
    const last = packets.at(-1)!;
    await truncate(file, last.pos + 20);
    const { index } = await indexOf(file);
    expect(index.video!.frameCount).toBe(packets.length - 1);
    await expectMatchesFfprobe(file, index, Promise.resolve(packets.slice(0, -1)));
  });

  it("bad Matroska is a typed error record", async () => {
    const good = new Uint8Array(
      await readFile(await makeMatroska(dir, { codec: "h264", frames: 10, name: "good.mkv" })),
    );
    const cases: [string, Uint8Array, string][] = [
      ["header only", good.slice(0, 40), "ERR_CORRUPT_MEDIA"],
      [
        "an unknown DocType",
        Uint8Array.from(good, (b, i) =>
          i >= 8 && i < 40 && good.subarray(i, i + 8).every((c, k) => c === "matroska".charCodeAt(k))
            ? "x".charCodeAt(0)
            : b,
        ),
        "ERR_CORRUPT_MEDIA",
      ],
    ];
    for (const [name, bytes, code] of cases) {
      const path = join(dir, `bad-${name.replace(/\W/g, "")}.mkv`);
      await writeFile(path, bytes);
      expect((await indexOf(path)).index, name).toMatchObject({ kind: "error", error: { code } });
    }
  });
});
