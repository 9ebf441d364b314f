import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

import { devices } from "../../native/index.js";

const { linkedLibraries, unexpectedLibraries } = createRequire(import.meta.url)(
  "../../native/ffmpeg/check-linked.cjs",
) as {
  linkedLibraries(file: string): string[];
  unexpectedLibraries(file: string): string[];
};
const addon = resolve(process.env.EC_NATIVE_PATH ?? join("native", "build", "Release", "ec_native.node"));

describe.skipIf(process.platform !== "linux" || !existsSync(addon))("the addon carries its own FFmpeg", () => {
  // FFmpeg, dav1d and zlib live inside the addon; CUDA, NVDEC and cuFile are dlopen'ed.
  it("needs libc, libm, libstdc++ and libgcc only (ldd)", () => {
    expect(unexpectedLibraries(addon)).toEqual([]);
    expect(linkedLibraries(addon)).toContain("libc.so.6");
  });

  it("exports none of FFmpeg's or dav1d's symbols", () => {
    const dynamic = execFileSync("nm", ["-D", "--defined-only", addon], { encoding: "utf8" });
    expect(dynamic.split("\n").filter((line) => / (av|avcodec|sws|swscale|ff|dav1d)_\w+$/.test(line))).toEqual([]);
  });

  it("decodes AV1 with libdav1d and the rest with FFmpeg's own decoders", () => {
    expect(devices().cpu.decoders).toMatchObject({ h264: "h264", hevc: "hevc", vp9: "vp9", av1: "libdav1d" });
  });

  it("ships the licences of what it links (FFmpeg LGPL 2.1, dav1d BSD, zlib) beside the build", () => {
    const dir = join(addon, "..", "licenses");
    const names = readdirSync(dir).map((name) => basename(name));
    expect(names).toEqual(expect.arrayContaining(["FFmpeg-LGPL-2.1.txt", "dav1d-BSD-2-Clause.txt", "zlib.txt"]));
    expect(readFileSync(join(dir, "FFmpeg-LGPL-2.1.txt"), "utf8")).toContain("GNU LESSER GENERAL PUBLIC LICENSE");
  });
});
