/**
 * `ec stream --preview FILE.png`: the contact sheet of the first batch, checked by decoding the
 * PNG with ffmpeg: its size is the layout's, and its first tile holds the first delivered
 * frame pixel for pixel.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main, streamWithProgress } from "../../../sdk/cli/stream.js";
import type { Batch } from "../../../sdk/pipeline/batcher.js";
import { contactSheet, labelsText } from "../../../sdk/preview/index.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { makeVideo } from "../../helpers/make-video.js";

const exec = promisify(execFile);
let dir: string;
let videos: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-preview-"));
  videos = join(dir, "videos");
  await exec("mkdir", ["-p", videos]);
  await makeVideo(videos, { codec: "h264", width: 96, height: 64, frames: 24, name: "a.mp4" });
  await makeVideo(videos, { codec: "h264", width: 96, height: 64, frames: 24, name: "b.mp4" });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function pngSize(file: string): Promise<[number, number]> {
  const { stdout } = await exec("ffprobe", [
    "-v",
    "error",
    "-show_entries",
    "stream=width,height,codec_name",
    "-of",
    "csv=p=0",
    file,
  ]);
  const [codec, w, h] = stdout.trim().split(",");
  expect(codec).toBe("png");
  return [Number(w), Number(h)];
}

/** The rgb24 pixels of a rectangle of the PNG, decoded by ffmpeg. */
async function pngCrop(file: string, x: number, y: number, w: number, h: number): Promise<Buffer> {
  const { stdout } = await exec(
    "ffmpeg",
    ["-v", "error", "-i", file, "-vf", `crop=${w}:${h}:${x}:${y}`, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
    {
      encoding: "buffer",
      maxBuffer: 64 << 20,
    },
  );
  return stdout;
}

describe("the first batch's contact sheet", () => {
  it("decodes to the layout's size and its first tile is the first delivered frame", async () => {
    const out = join(dir, "first.png");
    // The batch is released to the pool after onBatch: keep copies of the frames compared below.
    let first: { format: string; data: Buffer }[] | undefined;
    const run = await streamWithProgress(
      videos,
      { frames: 4, batch: 2, shuffle: false },
      {
        quiet: true,
        preview: out,
        onBatch: (b: Batch) => {
          first ??= [b.decoded[0]!.frames[0]!, b.decoded[1]!.frames[3]!].map((f) => ({
            format: f.format,
            data: Buffer.from(f.data),
          }));
        },
      },
    );
    expect(run.failed).toBeUndefined();
    // Two rows of four 96x64 tiles with 2 px gaps, 4 px margins and an 11 px caption above each row.
    const size = [4 + 4 * 96 + 3 * 2 + 4, 4 + 2 * (11 + 64 + 4)];
    expect(run.preview).toEqual({ path: out, width: size[0], height: size[1] });
    expect(await pngSize(out)).toEqual(size);
    const [frame, last] = first!;
    expect(frame!.format).toBe("rgb24");
    expect((await pngCrop(out, 4, 4 + 11, 96, 64)).equals(frame!.data)).toBe(true);
    expect((await pngCrop(out, 4 + 3 * 98, 4 + 2 * 11 + 64 + 4, 96, 64)).equals(last!.data)).toBe(true);
  });

  it("is written by `ec stream --preview` and named in its --json summary", async () => {
    const out = join(dir, "nested", "cli.png");
    const { code, out: stdout } = await captureOutput(() =>
      main([videos, "--frames", "2", "--batch", "3", "--limit", "3", "--preview", out, "--json"]),
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout.trim())).toMatchObject({ clips: 3, preview: out });
    expect(await pngSize(out)).toEqual([320, 4 + 3 * (11 + 64 + 4)]);
  });

  it("states the sheet's size in the text summary, and the file decodes to it", async () => {
    const out = join(dir, "stated.png");
    const { code, err } = await captureOutput(() => main([videos, "--frames", "3", "--batch", "2", "--preview", out]));
    expect(code).toBe(0);
    const stated = /\((\d+)x(\d+) px\)/.exec(err.split(`first batch: ${out} `)[1] ?? "");
    expect(stated).not.toBeNull();
    expect(await pngSize(out)).toEqual([Number(stated![1]), Number(stated![2])]);
  });

  it("refuses a preview path that is not a .png", async () => {
    const { code, err } = await captureOutput(() => main([videos, "--preview", join(dir, "x.jpg")]));
    expect(code).toBe(2);
    expect(err).toContain(`Expected a .png file for --preview but received "${join(dir, "x.jpg")}"`);
  });

  it("shrinks large frames by a whole factor and captions each row with key, start frame and labels", () => {
    const frame = { data: new Uint8Array(600 * 400 * 3).fill(200), width: 600, height: 400, format: "rgb24" };
    const info = {
      key: "big.mp4",
      start: 12,
      frames: 1,
      stride: 1,
      pts: [0],
      position: 0,
      labels: { flags: ["black"] },
    };
    const sheet = contactSheet([info], [{ frames: [frame] }]);
    expect(sheet.tiles).toEqual([{ clip: 0, frame: 0, x: 4, y: 15, width: 200, height: 133 }]);
    expect(labelsText(info.labels)).toBe("flags: black");
    expect(labelsText({ flags: [] })).toBe("no flags");
    expect(labelsText({ scene: 3 })).toBe("scene=3");
  });
});
