import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { main } from "../../sdk/cli/decode.js";
import type { MakeVideoOptions } from "../helpers/make-video.js";
import { makeVideo } from "../helpers/make-video.js";
import { cutCopy } from "../helpers/edit-list.js";
import { makeMatroska, makeTs } from "../helpers/make-matroska.js";
import { ffmpegFrameMd5s } from "./helpers.js";

const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-decode-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `ec decode` in-process, capturing what it writes. */
async function ecDecode(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const write = (sink: string[]) =>
    ((chunk: string | Uint8Array) => (sink.push(String(chunk)), true)) as typeof process.stdout.write;
  const [o, e] = [process.stdout.write, process.stderr.write];
  process.stdout.write = write(out);
  process.stderr.write = write(err);
  try {
    const code = await main(argv);
    return { code, stdout: out.join(""), stderr: err.join("") };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
  }
}

const md5Column = (stdout: string) =>
  stdout
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => l.split(",").at(-1)!.trim());

describe("ec decode --framemd5", () => {
  const cases: [string, MakeVideoOptions][] = [
    ["h264 with B-frames", { codec: "h264", width: 160, height: 96, frames: 40, bframes: 3, gop: 10 }],
    [
      "hevc with B-frames (open GOP by default)",
      { codec: "hevc", width: 160, height: 96, frames: 40, bframes: 3, gop: 10 },
    ],
  ];

  it.each(cases)(
    "%s: the md5 column equals ffmpeg's, also when split into many decode calls",
    async (_name, options) => {
      const file = await makeVideo(dir, options);
      const expected = await ffmpegFrameMd5s(file);
      const whole = await ecDecode([file, "--framemd5"]);
      expect(whole.code).toBe(0);
      expect(whole.stdout.split("\n")[0]).toBe("#format: frame checksums");
      expect(md5Column(whole.stdout)).toEqual(expected);
      const split = await ecDecode([file, "--framemd5", "--frames-per-call", "1"]);
      expect(md5Column(split.stdout)).toEqual(expected);
    },
  );

  it("on a constant-rate file every line matches ffmpeg's, timestamps and sizes included", async () => {
    const file = await makeVideo(dir, {
      codec: "h264",
      width: 160,
      height: 96,
      frames: 20,
      bframes: 2,
      gop: 10,
      name: "lines.mp4",
    });
    const { stdout } = await run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:v:0", "-f", "framemd5", "-"]);
    const ours = await ecDecode([file, "--framemd5"]);
    const lines = (text: string) => text.split("\n").filter((l) => l !== "" && !l.startsWith("#software"));
    expect(lines(ours.stdout)).toEqual(lines(stdout));
  });

  it("--start/--frames prints exactly that slice of ffmpeg's lines", async () => {
    const file = await makeVideo(dir, {
      codec: "h264",
      width: 160,
      height: 96,
      frames: 40,
      bframes: 2,
      gop: 10,
      name: "slice.mp4",
    });
    const expected = await ffmpegFrameMd5s(file);
    const r = await ecDecode([file, "--framemd5", "--start", "13", "--frames", "15"]);
    expect(r.code).toBe(0);
    expect(md5Column(r.stdout)).toEqual(expected.slice(13, 28));
  });

  it("--json summary; bad arguments and bad files exit non-zero with a coded message", async () => {
    const file = await makeVideo(dir, { codec: "vp9", width: 96, height: 64, frames: 8 });
    const ok = await ecDecode([file, "--json", "--output", "rgb24"]);
    expect(JSON.parse(ok.stdout)).toMatchObject({ codec: "vp9", format: "rgb24", frames: 8 });
    expect((await ecDecode([file, "--start", "x"])).code).toBe(2);
    expect((await ecDecode([file, "--start", "8"])).stderr).toMatch(/within the 8 frames/);
    const missing = await ecDecode([join(dir, "missing.mp4")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/ENOENT|no such file/);
  });

  it("a -ss 2.5 -c copy cut (edit list) gives ffmpeg's frames: none of the 15 before the cut point", async () => {
    const src = await makeVideo(dir, {
      codec: "h264",
      width: 96,
      height: 64,
      frames: 150,
      fps: 30,
      gop: 60,
      bframes: 2,
      name: "uncut.mp4",
    });
    const cut = await cutCopy(src, dir, { ss: 2.5, name: "cut.mp4" });
    const expected = await ffmpegFrameMd5s(cut);
    expect(expected).toHaveLength(75);
    const r = await ecDecode([cut, "--framemd5"]);
    expect(r.code, r.stderr).toBe(0);
    expect(md5Column(r.stdout)).toEqual(expected);
    // The lines themselves, timestamps included: frame 0 at pts 0, as ffmpeg prints it.
    const { stdout } = await run("ffmpeg", ["-v", "error", "-i", cut, "-map", "0:v:0", "-f", "framemd5", "-"]);
    const lines = (text: string) => text.split("\n").filter((l) => l !== "" && !l.startsWith("#software"));
    expect(lines(r.stdout)).toEqual(lines(stdout));
    const slice = await ecDecode([cut, "--framemd5", "--start", "40", "--frames", "20", "--frames-per-call", "7"]);
    expect(md5Column(slice.stdout)).toEqual(expected.slice(40, 60));
  });

  it.each(["mkv", "ts"] as const)(
    "a .%s file: the md5 column equals ffmpeg's, also split into many decode calls",
    async (kind) => {
      const file =
        kind === "mkv"
          ? await makeMatroska(dir, { codec: "hevc", frames: 30, name: "cli.mkv" })
          : await makeTs(dir, { codec: "h264", frames: 30, audio: true, name: "cli.ts" });
      const expected = await ffmpegFrameMd5s(file);
      const r = await ecDecode([file, "--framemd5"]);
      expect(r.code, r.stderr).toBe(0);
      expect(md5Column(r.stdout)).toEqual(expected);
      expect(md5Column((await ecDecode([file, "--framemd5", "--frames-per-call", "1"])).stdout)).toEqual(expected);
    },
  );
});
