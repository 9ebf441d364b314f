import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { NativeUnavailableError } from "../../native/index.js";
import { addonCandidates, findBuild, loadFirst } from "../../native/lib/load.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-load-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the loader", () => {
  it("tries every build and throws one message that lists each failure and what to do", async () => {
    const broken = join(dir, "ec_native.node");
    await writeFile(broken, "not an ELF file");
    const missing = join(dir, "Release", "ec_native.node");
    let error: unknown;
    try {
      loadFirst([missing, broken]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(NativeUnavailableError);
    const e = error as NativeUnavailableError;
    expect(e.code).toBe("ERR_NATIVE_UNAVAILABLE");
    expect(e.message).toContain(`${missing}: not built`);
    expect(e.message).toContain(`${broken}: `);
    expect(e.message).toMatch(/npx ec build-native/);
  });

  it("with nothing built, names the build command and what it really needs, and no system FFmpeg", () => {
    let message = "";
    try {
      loadFirst([join(dir, "none.node")]);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("`npx ec build-native` where ec is installed (`npm run setup` in a checkout)");
    expect(message).toContain("a C++17 compiler, make, python3 and node-gyp");
    expect(message).toContain("the minimal static FFmpeg the addon links with native/ffmpeg/build.sh");
    expect(message).not.toMatch(/libav\w*-dev|pkg-config|npm rebuild/);
    if (`${process.platform}-${process.arch}` === "linux-x64")
      expect(message).toContain("not even the prebuilt one the package ships for linux-x64");
  });

  it("findBuild says which build loaded", () => {
    const built = addonCandidates().find((p) => existsSync(p))!;
    expect(findBuild([join(dir, "none.node"), built]).path).toBe(built);
  });

  it("looks for the shipped prebuilt for this platform after the local builds", () => {
    const paths = addonCandidates();
    const prebuilt = paths.findIndex((p) =>
      p.endsWith(join("native", "prebuilds", `${process.platform}-${process.arch}`, "ec_native.node")),
    );
    const release = paths.findIndex((p) => p.endsWith(join("native", "build", "Release", "ec_native.node")));
    expect(release).toBeGreaterThanOrEqual(0);
    expect(prebuilt).toBeGreaterThan(release);
  });
});
