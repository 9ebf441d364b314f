/**
 * The package's install step (scripts/install-native.mjs) on a copy of the package layout: it
 * takes a prebuilt that loads, and where none fits and nothing can be built it still lets the
 * install succeed, printing the loader's message: what to install, then `npm rebuild ec`.
 */
import { execFile } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const exec = promisify(execFile);
const repo = resolve(import.meta.dirname, "..", "..");
let pkg: string;

beforeEach(() => {
  pkg = mkdtempSync(join(tmpdir(), "ec-install-"));
  cpSync(join(repo, "scripts", "install-native.mjs"), join(pkg, "scripts", "install-native.mjs"));
  cpSync(join(repo, "dist", "native"), join(pkg, "dist", "native"), { recursive: true });
  cpSync(join(repo, "dist", "common"), join(pkg, "dist", "common"), { recursive: true });
  // The dependencies are installed before a package's own install step runs.
  symlinkSync(join(repo, "node_modules"), join(pkg, "node_modules"), "dir");
});
afterEach(() => {
  rmSync(pkg, { recursive: true, force: true });
});

/** Runs the install step as npm would, with `env` over a PATH where no pkg-config (nor anything else) is found. */
async function install(env: Record<string, string> = {}): Promise<{ code: number; log: string }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "EC_NATIVE_PATH"),
  );
  try {
    const { stdout, stderr } = await exec(process.execPath, [join(pkg, "scripts", "install-native.mjs")], {
      cwd: pkg,
      env: { ...base, PATH: join(pkg, "bin"), ...env },
    });
    return { code: 0, log: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, log: e.stdout + e.stderr };
  }
}

describe("the install step", () => {
  it("uses the prebuilt for this platform when it loads", async () => {
    const dir = join(pkg, "native", "prebuilds", `${process.platform}-${process.arch}`);
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(repo, "native", "build", "Release", "ec_native.node"), join(dir, "ec_native.node"));
    const { code, log } = await install();
    expect(code, log).toBe(0);
    expect(log).toContain("native addon: found a build that loads");
  });

  it("without a prebuilt and without the libav* packages, installs anyway and says what to do", async () => {
    const gyp = join(repo, "node_modules", "node-gyp", "bin", "node-gyp.js");
    const { code, log } = await install({ npm_config_node_gyp: gyp });
    expect(code, log).toBe(0);
    expect(log).toContain(
      "no prebuilt fits, and pkg-config finds no libavcodec, libavutil, libswscale to build one against",
    );
    expect(log).toMatch(/The ec native addon could not be loaded\. .*libavcodec-dev libavutil-dev libswscale-dev/);
    expect(log).toContain(
      `${join(pkg, "native", "prebuilds", `${process.platform}-${process.arch}`, "ec_native.node")}: not built`,
    );
    expect(log).toContain("Then run `npm rebuild ec`");
  });
});
