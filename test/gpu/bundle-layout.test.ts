import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { MakeVideoOptions } from "../helpers/make-video.js";
import { indexedVideo } from "../native/helpers.js";
import { decodeOn, nvdecLayoutMd5s } from "./bundle/decode.js";
import { layoutMd5s } from "./bundle/references.js";
import type { Layout } from "./bundle/shared.js";

// The GPU bundle compares NVDEC's frames with md5s of the software decode repacked by
// `ffmpeg -pix_fmt nv12|p010le`; the CPU decoder repacked the same way must give the same md5s.
describe("the GPU bundle's references in NVDEC's layout", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "ec-gpu-layout-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cases: [string, MakeVideoOptions, Layout][] = [
    ["h264 with B-frames as nv12", { codec: "h264", width: 96, height: 64, frames: 12, bframes: 2 }, "nv12"],
    [
      "hevc 10-bit as p010le",
      { codec: "hevc", width: 96, height: 64, frames: 8, pixFmt: "yuv420p10le", name: "p010.mp4" },
      "p010le",
    ],
  ];
  it.each(cases)("%s: the CPU decode repacked equals ffmpeg's framemd5", async (_name, options, layout) => {
    const v = await indexedVideo(dir, options);
    const ours = nvdecLayoutMd5s(await decodeOn(v, "cpu"), layout);
    expect(ours).toHaveLength(options.frames);
    expect(ours).toEqual(await layoutMd5s(v.file, layout));
  });

  it("refuses frames of another format", async () => {
    const v = await indexedVideo(dir, { codec: "h264", width: 96, height: 64, frames: 2, name: "wrong.mp4" });
    const frames = await decodeOn(v, "cpu");
    expect(() => nvdecLayoutMd5s(frames, "p010le")).toThrow(
      "Expected p010le or yuv420p10le frames but received yuv420p",
    );
  });
});
