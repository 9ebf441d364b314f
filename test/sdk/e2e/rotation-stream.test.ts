import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { open, type ClipInfo, type OpenOptions, type SdkError } from "../../../sdk/index.js";
import { uploadFiles } from "../../helpers/edge-upload.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeRotatedMov, probeRotation } from "../../helpers/make-video.js";

let dir: string;
let edge: LocalEdge;
/** key → [rotation clockwise, the local file]. */
const files = new Map<string, [number, string]>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-rotation-e2e-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  for (const tag of [90, 180, 270]) {
    const file = await makeRotatedMov(dir, { rotate: tag, width: 96, height: 64, frames: 24, gop: 8 });
    files.set(`rot/r${tag}.mov`, [await probeRotation(file), file]);
  }
  edge = await started;
  await uploadFiles(
    edge,
    [...files].map(([key, [, file]]) => [key, file] as const),
  );
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Streams the dataset, checking every frame against `want` (key → md5s); returns the clips and their batches' shapes. */
async function streamChecked(options: OpenOptions, want: Map<string, string[]>) {
  const errors: SdkError[] = [];
  const ds = await open(`${edge.url}/v1/datasets/rot`, {
    token: edge.token,
    device: "cpu",
    frames: 3,
    stride: 2,
    align: "exact",
    hop: 5,
    onError: (e) => errors.push(e),
    ...options,
  });
  const clips: ClipInfo[] = [];
  const shapes: number[][] = [];
  let frames = 0;
  try {
    for await (const b of ds) {
      frames += expectFramesMatch(b, (key) => want.get(key));
      clips.push(...b.clips);
      shapes.push([...b.frames.shape]);
    }
  } finally {
    await ds.close();
  }
  return { clips, frames, shapes, errors, stats: ds.stats() };
}

const md5sOf = async (o: Parameters<typeof ffmpegFrameMd5s>[1]) =>
  new Map(await Promise.all([...files].map(async ([key, [, file]]) => [key, await ffmpegFrameMd5s(file, o)] as const)));

describe("rotated video with a second video track and audio, through the local edge", () => {
  it("frames come as coded by default (ffmpeg -noautorotate), with ClipInfo.rotation saying how to turn them", async () => {
    const { clips, frames, errors } = await streamChecked({ format: "native" }, await md5sOf({ autorotate: false }));
    expect(errors).toEqual([]);
    expect(frames).toBe(clips.length * 3);
    expect(clips.length).toBe(3 * 4);
    for (const c of clips) expect(c.rotation).toBe(files.get(c.key)![0]);
    expect(new Set(clips.map((c) => c.rotation))).toEqual(new Set([90, 180, 270]));
  });

  it('rotate: "auto" turns them upright, md5-equal to ffmpeg\'s autorotated frames for 90, 180 and 270', async () => {
    const { clips, frames } = await streamChecked({ format: "native", rotate: "auto" }, await md5sOf({}));
    expect(frames).toBe(12 * 3);
    expect(clips.every((c) => c.rotation !== 0)).toBe(true);
  });

  it('rotate: "auto" with size: the upright frames are size, whichever way the video turns', async () => {
    const { shapes } = await streamChecked({ rotate: "auto", size: [40, 24], batch: 12, shuffle: "none" }, new Map());
    expect(shapes).toEqual([[12, 3, 40, 24, 3]]);
    const asCoded = await streamChecked({ size: [40, 24], batch: 12 }, new Map());
    expect(asCoded.shapes).toEqual([[12, 3, 40, 24, 3]]);
  });

  it("track: 1 streams the second video track, md5-equal to ffmpeg -map 0:v:1; the audio track plays no part", async () => {
    const want = await md5sOf({ stream: 1 });
    const { clips, frames } = await streamChecked({ format: "native", track: 1 }, want);
    // Clips of span 5 every 5 frames of the second track, whose length its muxing decided.
    expect(frames).toBe([...want.values()].reduce((n, md5s) => n + Math.floor((md5s.length - 5) / 5) + 1, 0) * 3);
    expect(clips.every((c) => c.rotation === 0 && c.source?.width === 48)).toBe(true);
  });

  it("track: 2 is a typed error per object, and open() fails when no object has it", async () => {
    await expect(
      open(`${edge.url}/v1/datasets/rot`, { token: edge.token, device: "cpu", track: 2 }),
    ).rejects.toMatchObject({
      code: "ERR_TRACK_NOT_FOUND",
      message: expect.stringMatching(/^rot\/r\d+\.mov has 2 video tracks but track 2 \(0-based\) was asked for/),
    });
  });
});
