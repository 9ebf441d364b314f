/**
 * `ec build-native`, the fallback a user runs where the shipped prebuilt does not fit, on a copy
 * of the installed package's layout: it builds nothing when an addon loads, and where none does
 * and the tools are missing it says which, before compiling anything.
 */
import { execFile } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const exec = promisify(execFile);
const repo = resolve(import.meta.dirname, "..", "..", "..");
let pkg: string;

beforeEach(() => {
  pkg = mkdtempSync(join(tmpdir(), "ec-build-native-"));
  for (const path of [
    "package.json",
    "bin",
    "dist/sdk",
    "dist/native",
    "dist/common",
    "dist/origin-cache",
    "native/binding.gyp",
    "native/src",
    "native/ffmpeg",
  ]) {
    cpSync(join(repo, path), join(pkg, path), { recursive: true });
  }
  symlinkSync(join(repo, "node_modules"), join(pkg, "node_modules"), "dir");
});
afterEach(() => {
  rmSync(pkg, { recursive: true, force: true });
});

/** `ec build-native` as a user runs it, with `env` over the environment (no EC_NATIVE_PATH, no npm_*). */
async function buildNative(env: Record<string, string> = {}): Promise<{ code: number; log: string }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "EC_NATIVE_PATH"),
  );
  try {
    const { stdout, stderr } = await exec(process.execPath, [join(pkg, "bin", "ec.js"), "build-native"], {
      cwd: pkg,
      env: { ...base, ...env },
    });
    return { code: 0, log: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, log: e.stdout + e.stderr };
  }
}

describe("ec build-native", () => {
  it("builds nothing when the shipped prebuilt loads", async () => {
    const dir = join(pkg, "native", "prebuilds", `${process.platform}-${process.arch}`);
    mkdirSync(dir, { recursive: true });
    // This machine's build stands in for the prebuilt.
    copyFileSync(join(repo, "native", "build", "Release", "ec_native.node"), join(dir, "ec_native.node"));
    const { code, log } = await buildNative();
    expect(code, log).toBe(0);
    expect(log).toContain(`${join(dir, "ec_native.node")} loads; nothing to build`);
    expect(existsSync(join(pkg, "native", "build"))).toBe(false);
  });

  it("where no build loads and no compiler, make or python3 is found, says so and compiles nothing", async () => {
    const { code, log } = await buildNative({ PATH: join(pkg, "no-tools") });
    expect(code, log).toBe(1);
    expect(log).toContain("ec build-native: [ERR_NATIVE_UNAVAILABLE]");
    expect(log).toContain("a C++17 compiler (c++; Debian/Ubuntu: apt-get install g++)");
    expect(log).toMatch(/\bmake\b/);
    expect(log).toContain("python3");
    expect(existsSync(join(pkg, "native", "build"))).toBe(false);
  });
});
