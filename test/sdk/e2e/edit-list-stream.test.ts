import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { open, type ClipInfo, type SdkError } from "../../../sdk/index.js";
import { cutCopy, patchEdit } from "../../helpers/edit-list.js";
import { uploadFiles } from "../../helpers/edge-upload.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";

let dir: string;
let edge: LocalEdge;
const expected = new Map<string, string[]>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-elst-e2e-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  const h264 = await makeVideo(dir, {
    codec: "h264",
    width: 96,
    height: 64,
    frames: 120,
    fps: 30,
    gop: 60,
    bframes: 2,
  });
  const hevc = await makeVideo(dir, {
    codec: "hevc",
    width: 96,
    height: 64,
    frames: 120,
    fps: 30,
    gop: 40,
    bframes: 3,
  });
  const files = new Map([
    // 15 frames before the cut point in the first GOP: decoded as references, never delivered.
    ["elst/h264-cut.mp4", await cutCopy(h264, dir, { ss: 2.5, name: "h264-cut.mp4" })],
    ["elst/hevc-cut.mp4", await cutCopy(hevc, dir, { ss: 1.1, name: "hevc-cut.mp4" })],
    ["elst/delay.mp4", await cutCopy(h264, dir, { itsoffset: 1, name: "delay.mp4" })],
    [
      "elst/short.mp4",
      await patchEdit(await cutCopy(h264, dir, { ss: 0.5, name: "long.mp4" }), join(dir, "short.mp4"), {
        duration: 1500,
      }),
    ],
  ]);
  edge = await started;
  for (const [key, file] of files) expected.set(key, await ffmpegFrameMd5s(file));
  await uploadFiles(edge, files);
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function streamAll(
  options: Parameters<typeof open>[1],
): Promise<{ clips: ClipInfo[]; frames: number; errors: SdkError[] }> {
  const errors: SdkError[] = [];
  const ds = await open(`${edge.url}/v1/datasets/elst`, {
    token: edge.token,
    device: "cpu",
    format: "native",
    onError: (e) => errors.push(e),
    ...options,
  });
  const clips: ClipInfo[] = [];
  let frames = 0;
  try {
    for await (const b of ds) {
      frames += expectFramesMatch(b, (key) => expected.get(key));
      clips.push(...b.clips);
    }
  } finally {
    await ds.close();
  }
  return { clips, frames, errors };
}

describe("edit lists through the local edge", () => {
  it("tiled clips from every start, mid-GOP ones included, are md5-equal to ffmpeg's frames after the edit", async () => {
    const { clips, frames, errors } = await streamAll({ frames: 4, stride: 3, hop: 7, align: "exact", batch: 3 });
    expect(errors).toEqual([]);
    // Every start a span of 10 fits in the frames ffmpeg outputs, for every object.
    const want = [...expected].reduce((n, [, md5s]) => n + Math.floor((md5s.length - 10) / 7) + 1, 0);
    expect(clips).toHaveLength(want);
    expect(frames).toBe(want * 4);
  });

  it("ClipInfo pts are presentation times after the edit: frame i of the cut at i/30 s", async () => {
    const { clips } = await streamAll({ frames: 2, stride: 5, align: "exact" });
    for (const c of clips.filter((c) => c.key !== "elst/delay.mp4")) {
      c.pts.forEach((p, t) => expect(p).toBeCloseTo((c.start + t * c.stride) / 30, 9));
    }
    // The empty edit delays the track by a second, as ffprobe's frame pts say.
    for (const c of clips.filter((c) => c.key === "elst/delay.mp4")) expect(c.pts[0]).toBeCloseTo(1 + c.start / 30, 9);
    expect(clips.find((c) => c.key === "elst/h264-cut.mp4" && c.start === 0)!.pts[0]).toBe(0);
  });

  it("keyframe-aligned clips start at frame 0 of a cut though its keyframe lies before the edit", async () => {
    const { clips, errors } = await streamAll({ frames: 8, align: "keyframe" });
    expect(errors).toEqual([]);
    const starts = (key: string) =>
      clips
        .filter((c) => c.key === key)
        .map((c) => c.start)
        .sort((a, b) => a - b);
    // The 120-frame source has keyframes at 0 and 60; the cut at 2.5 s (frame 75) keeps 45 frames, none a keyframe.
    expect(starts("elst/h264-cut.mp4")).toEqual([0]);
    expect(expected.get("elst/h264-cut.mp4")).toHaveLength(45);
  });
});
