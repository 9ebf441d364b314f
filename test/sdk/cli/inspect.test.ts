import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { main } from "../../../sdk/cli/inspect.js";
import { makeImage, makeNpy, makeVideo, probePackets } from "../../helpers/make-video.js";
import { uploadBytes } from "../../helpers/edge-upload.js";

let dir: string;
let edge: LocalEdge;
let h264: string;

const put = (key: string, bytes: Uint8Array | string) =>
  uploadBytes(edge, key, typeof bytes === "string" ? bytes : new Uint8Array(bytes));

/** Runs `ec inspect` in-process and captures what it writes. */
async function inspect(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "",
    err = "";
  const o = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => ((out += String(chunk)), true));
  const e = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => ((err += String(chunk)), true));
  try {
    const code = await main(argv);
    return { code, out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-inspect-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  h264 = await makeVideo(dir, { codec: "h264", width: 160, height: 96, frames: 30, bframes: 2, gop: 10 });
  const hevc = await makeVideo(dir, { codec: "hevc", width: 128, height: 64, frames: 24, fps: 30 });
  const jpg = await makeImage(dir, { format: "jpeg", width: 64, height: 48 });
  const npy = await makeNpy(dir, { dtype: "<f4", shape: [3, 4] });
  edge = await started;
  await put("insp/a.mp4", await readFile(h264));
  await put("insp/b/hevc.mp4", await readFile(hevc));
  await put("insp/c.jpg", await readFile(jpg));
  await put("insp/d.npy", await readFile(npy));
  await put("insp/broken.mp4", (await readFile(h264)).subarray(0, 2000));
  await put("insp/notes.txt", "hello");
  await put("insp/e.avi", await readFile(await remux(h264, join(dir, "e.avi"))));
}, 180_000);

/** The same stream in another container, by ffmpeg stream copy. */
async function remux(src: string, out: string): Promise<string> {
  await promisify(execFile)("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", src, "-c", "copy", out]);
  return out;
}

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("ec inspect against a local edge", () => {
  it("summarizes the dataset as JSON", async () => {
    const { code, out } = await inspect(`${edge.url}/v1/datasets/insp`, "--token", edge.token, "--json");
    expect(code).toBe(0);
    const s = JSON.parse(out);
    expect(s).toMatchObject({
      dataset: "insp",
      objects: 7,
      byKind: { video: 2, error: 2, image: 1, array: 1, other: 1 },
      codecs: { h264: 1, hevc: 1 },
      resolutions: { "160x96": 1, "128x64": 1, "64x48": 1 },
      frameRates: { "25": 1, "30": 1 },
      frames: 54,
    });
    expect(s.duration.total).toBeCloseTo(30 / 25 + 24 / 30, 6);
    // Every object that streams nothing is listed, with the container it is when ec knows it.
    expect(s.errors).toEqual([
      { key: "insp/broken.mp4", code: "ERR_TRUNCATED", message: expect.any(String) },
      {
        key: "insp/e.avi",
        code: "ERR_KIND_UNSUPPORTED",
        message: expect.stringMatching(/^insp\/e\.avi is AVI, which ec does not stream/),
      },
      {
        key: "insp/notes.txt",
        code: "ERR_KIND_UNSUPPORTED",
        message: expect.stringMatching(/^insp\/notes\.txt is no format ec reads/),
      },
    ]);
  });

  it("prints a readable summary", async () => {
    const { code, out } = await inspect(`${edge.url}/v1/datasets/insp`, "--token", edge.token);
    expect(code).toBe(0);
    expect(out).toMatch(/objects\s+7 /);
    expect(out).toContain("errors       3");
    expect(out).toContain("insp/broken.mp4: ERR_TRUNCATED");
  });

  it("--index NAME --json prints every sample, equal to ffprobe", async () => {
    const { code, out } = await inspect(
      `${edge.url}/v1/datasets/insp`,
      "--token",
      edge.token,
      "--index",
      "a.mp4",
      "--json",
    );
    expect(code).toBe(0);
    const index = JSON.parse(out);
    const packets = await probePackets(h264);
    expect(index.video.samples).toEqual(
      packets.map((p) => ({ offset: p.pos, size: p.size, keyframe: p.keyframe, pts: p.pts, dts: p.dts })),
    );
  });

  it("--index NAME prints samples, keyframes and GOP lengths", async () => {
    const { code, out } = await inspect(`${edge.url}/v1/datasets/insp`, "--token", edge.token, "--index", "a.mp4");
    expect(code).toBe(0);
    expect(out).toMatch(/samples\s+30/);
    expect(out).toMatch(/keyframes\s+3/);
    expect(out).toContain("10 10 10");
  });

  it("fails clearly without a token, and for a missing name", async () => {
    const noToken = await inspect(`${edge.url}/v1/datasets/insp`);
    expect(noToken.code).toBe(1);
    expect(noToken.err).toContain("ERR_UNAUTHORIZED");
    const missing = await inspect(`${edge.url}/v1/datasets/insp`, "--token", edge.token, "--index", "nope.mp4");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("ERR_NOT_FOUND");
    expect((await inspect()).code).toBe(2);
  });
});
