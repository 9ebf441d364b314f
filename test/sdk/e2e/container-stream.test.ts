import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { open, type SdkError } from "../../../sdk/index.js";
import { uploadFiles } from "../../helpers/edge-upload.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeMatroska, makeTs } from "../../helpers/make-matroska.js";

let dir: string;
let edge: LocalEdge;
const expected = new Map<string, string[]>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-mkv-e2e-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  const files = new Map([
    ["mkv/h264.mkv", await makeMatroska(dir, { codec: "h264", frames: 36, gop: 12, name: "h264.mkv" })],
    [
      "mkv/live.mkv",
      await makeMatroska(dir, { codec: "h264", frames: 36, gop: 12, live: true, audio: true, name: "live.mkv" }),
    ],
    ["mkv/hevc.mkv", await makeMatroska(dir, { codec: "hevc", frames: 36, gop: 12, name: "hevc.mkv" })],
    ["mkv/vp8.webm", await makeMatroska(dir, { codec: "vp8", frames: 36, gop: 12, name: "vp8.webm" })],
    ["mkv/vp9.webm", await makeMatroska(dir, { codec: "vp9", frames: 36, gop: 12, name: "vp9.webm" })],
    ["mkv/av1.webm", await makeMatroska(dir, { codec: "av1", frames: 36, gop: 12, name: "av1.webm" })],
    ["ts/h264.ts", await makeTs(dir, { codec: "h264", frames: 36, gop: 12, audio: true, name: "h264.ts" })],
    ["ts/hevc.ts", await makeTs(dir, { codec: "hevc", frames: 36, gop: 12, audio: true, name: "hevc.ts" })],
    ["ts/h264.m2ts", await makeTs(dir, { codec: "h264", frames: 36, gop: 12, m2ts: true, name: "h264.m2ts" })],
  ]);
  for (const [key, file] of files) expected.set(key, await ffmpegFrameMd5s(file));
  edge = await started;
  await uploadFiles(edge, files);
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Every exact-aligned clip of a prefix (3 frames, stride 2, every 5 frames), each frame checked against ffmpeg. */
async function streamChecked(prefix: string) {
  const errors: SdkError[] = [];
  const ds = await open(`${edge.url}/v1/datasets/${prefix}`, {
    token: edge.token,
    device: "cpu",
    format: "native",
    frames: 3,
    stride: 2,
    hop: 5,
    align: "exact",
    batch: 4,
    onError: (e) => errors.push(e),
  });
  const keys = new Set<string>();
  let frames = 0;
  for await (const b of ds) {
    frames += expectFramesMatch(b, (key) => expected.get(key));
    for (const c of b.clips) keys.add(c.key);
  }
  await ds.close();
  return { errors: errors.map((e) => `${e.code}: ${e.message}`), keys: [...keys].sort(), frames, stats: ds.stats() };
}

describe("Matroska, WebM and MPEG-TS through the local edge (indexed in workerd)", () => {
  it("clips from every start, mid-GOP ones included, are md5-equal to ffmpeg's frames: h264, hevc, vp8, vp9, av1, with and without Cues", async () => {
    const { errors, keys, frames, stats } = await streamChecked("mkv");
    expect(errors).toEqual([]);
    expect(keys).toEqual([
      "mkv/av1.webm",
      "mkv/h264.mkv",
      "mkv/hevc.mkv",
      "mkv/live.mkv",
      "mkv/vp8.webm",
      "mkv/vp9.webm",
    ]);
    // 36 frames, span 5, hop 5: 7 clips of 3 frames per object.
    expect(frames).toBe(6 * 7 * 3);
    expect(stats.errors).toEqual({});
  });

  it("MPEG-TS (H.264, HEVC, M2TS): access units taken out of their TS packets decode md5-equal to ffmpeg, from every start", async () => {
    const { errors, keys, frames, stats } = await streamChecked("ts");
    expect(errors).toEqual([]);
    expect(keys).toEqual(["ts/h264.m2ts", "ts/h264.ts", "ts/hevc.ts"]);
    expect(frames).toBe(3 * 7 * 3);
    // Clips fetch the TS packets their access units lie in, audio packets between them included.
    expect(stats.bytes_needed).toBeGreaterThan(0);
  });

  it("keyframe-aligned clips start at the keyframes the index found", async () => {
    const ds = await open(`${edge.url}/v1/datasets/mkv`, {
      token: edge.token,
      device: "cpu",
      format: "native",
      frames: 4,
      shuffle: "none",
      align: "keyframe",
    });
    const starts = new Map<string, number[]>();
    for await (const b of ds) {
      expectFramesMatch(b, (key) => expected.get(key));
      for (const c of b.clips) starts.set(c.key, [...(starts.get(c.key) ?? []), c.start]);
    }
    await ds.close();
    expect(starts.get("mkv/h264.mkv")!.sort((a, b) => a - b)).toEqual([0, 12, 24]);
  });
});
