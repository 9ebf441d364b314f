import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { readFile, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeIndex, encodeIndex, tsAccessUnit } from "../../../common/media-index/index.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { makeTs } from "../../helpers/make-matroska.js";
import { probePackets } from "../../helpers/make-video.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-ts-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("MPEG-TS samples equal ffprobe -show_packets (pos, pts, dts, flags; size of the access unit)", () => {
  const cases: [string, Parameters<typeof makeTs>[1]][] = [
    ["h264 with B-frames", { codec: "h264", frames: 40, name: "h264.ts" }],
    [
      "h264 with B-frames and AAC, odd size 100x60",
      { codec: "h264", frames: 40, audio: true, width: 100, height: 60, name: "h264-aac.ts" },
    ],
    ["hevc with B-frames and AAC", { codec: "hevc", frames: 40, audio: true, name: "hevc.ts" }],
    ["h264 in M2TS (192-byte packets)", { codec: "h264", frames: 30, m2ts: true, name: "h264.m2ts" }],
    // 2^33 ticks of 90 kHz wrap after 95443.7 s: the first timestamps come out negative, as in ffmpeg.
    ["timestamps crossing the 33-bit wrap", { codec: "h264", frames: 40, tsOffset: 95441.5, name: "wrap.ts" }],
    [
      "timestamps wrapped a minute before the start",
      { codec: "h264", frames: 40, tsOffset: 95500, name: "wrapped.ts" },
    ],
  ];
  it.each(cases)(
    "%s",
    async (_name, o) => {
      const file = await makeTs(dir, o);
      const { index, requests } = await indexLocalFile(file, o.name);
      expect(index.error).toBeUndefined();
      const v = index.video!;
      expect(v).toMatchObject({
        codec: o.codec,
        width: o.width ?? 96,
        height: o.height ?? 64,
        frameCount: o.frames,
        timescale: 90000,
      });
      expect(v.fps).toBeCloseTo(25, 6);
      expect(v.mpegts).toEqual({ pid: expect.any(Number), packetSize: o.m2ts ? 192 : 188 });
      const packets = await probePackets(file);
      const s = v.samples;
      expect(Array.from(s.offset)).toEqual(packets.map((p) => p.pos));
      expect(Array.from(s.pts)).toEqual(packets.map((p) => p.pts));
      expect(Array.from(s.dts)).toEqual(packets.map((p) => p.dts));
      expect(Array.from(s.keyframe, (k) => k === 1)).toEqual(packets.map((p) => p.keyframe));
      // A sample is the run of TS packets carrying its PES packet; its payload is the access unit.
      // ffmpeg's HEVC parser hands a 4-byte start code's leading zero to the unit before: ±1 byte.
      const bytes = new Uint8Array(await readFile(file));
      const sizes = Array.from(
        s.offset,
        (off, i) => tsAccessUnit(bytes.subarray(off, off + s.size[i]!), v.mpegts!.pid, v.mpegts!.packetSize).length,
      );
      sizes.forEach((n, i) =>
        expect(Math.abs(n - packets[i]!.size), `sample ${i}`).toBeLessThanOrEqual(o.codec === "hevc" ? 1 : 0),
      );
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(packets.reduce((a, p) => a + p.size, 0));
      // Read once, forward: one window of 4 MiB per request.
      expect(requests.length).toBeLessThanOrEqual(Math.ceil((await stat(file)).size / (4 << 20)) + 1);
      const back = decodeIndex(encodeIndex(index));
      expect(back.video!.mpegts).toEqual(v.mpegts);
    },
    30_000,
  );

  it("an audio-only stream, and a lost sync byte, are typed error records", async () => {
    const file = await makeTs(dir, { codec: "h264", frames: 10, name: "good.ts" });
    const bytes = new Uint8Array(await readFile(file));
    const lost = bytes.slice();
    lost[188 * 5] = 0x46;
    await writeFile(join(dir, "lost.ts"), lost);
    expect((await indexLocalFile(join(dir, "lost.ts"), "lost.ts")).index).toMatchObject({
      kind: "error",
      error: { code: "ERR_CORRUPT_MEDIA", message: expect.stringMatching(/lost TS sync/) },
    });
    await promisify(execFile)("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=1",
      "-c:a",
      "aac",
      "-f",
      "mpegts",
      join(dir, "novideo.ts"),
    ]);
    expect((await indexLocalFile(join(dir, "novideo.ts"), "novideo.ts")).index).toMatchObject({
      kind: "error",
      error: { code: "ERR_NO_VIDEO_TRACK" },
    });
  });
});
