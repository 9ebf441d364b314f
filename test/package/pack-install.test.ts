/**
 * The package as a user gets it: `npm pack` of a copy of the sources (prepack builds dist/ and
 * takes the prebuilt addon, built here by `npm run native:prebuild` once per change of its
 * sources), then, with npm 10 and with npm 11, installed into a fresh project from the tarball
 * with npm's default settings (no install script approved; dependencies from the registry
 * through the npm cache), and two clips streamed from a local folder with
 * `import { open } from "ec"` and with `npx ec stream`.
 */
import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVideo } from "../helpers/make-video.js";
import { type NpmCli, npmCli } from "../helpers/npm-cli.js";

const exec = promisify(execFile);
const repo = resolve(import.meta.dirname, "..", "..");
const platform = `${process.platform}-${process.arch}`;
/** The releases users install with: npm 10 (Node 20 and 22) and npm 11 (Node 24, which holds install scripts until approved). */
const NPM_RELEASES = ["10.9.9", "11.19.1"];
/** Builds and local state of the checkout stay out of the copy that is packed. */
const NOT_COPIED = new Set(["native/build"]);

/** What packing needs: package.json, the tsconfigs, scripts/, and the top folders of `files` and of the build's sources. */
function packInputs(): string[] {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { files: string[] };
  const build = JSON.parse(readFileSync(join(repo, "tsconfig.build.json"), "utf8")) as { include: string[] };
  const tops = [...pkg.files, ...build.include].filter((f) => !f.startsWith("!")).map((f) => f.split("/")[0]!);
  return [
    ...new Set(["package.json", "README.md", "tsconfig.base.json", "tsconfig.build.json", "scripts", ...tops]),
  ].filter((f) => f !== "dist" && existsSync(join(repo, f)));
}

/** The environment without the npm_* variables of an npm that may have started vitest: npm's defaults. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "EC_NATIVE_PATH"),
  );
  return { ...env, npm_config_update_notifier: "false" };
}

async function sh(cmd: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  const [file, ...args] = cmd as [string, ...string[]];
  try {
    return await exec(file, args, { cwd, env: cleanEnv(), maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd.join(" ")} failed in ${cwd}: ${e.message}\n${e.stdout ?? ""}\n${e.stderr ?? ""}`);
  }
}

let tmp: string;
let videos: string;
let tarball: string;
let packLog: string;
let packed: { filename: string; size: number; files: { path: string }[] };

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ec-pack-"));
  // The prebuilt users get: built here when missing or built from other sources (about a
  // minute with the FFmpeg and CUDA toolkit caches, minutes without), else left as it is.
  await sh([process.execPath, join(repo, "scripts", "prebuild.mjs"), "--if-stale"], repo);

  const src = join(tmp, "src");
  for (const top of packInputs()) {
    cpSync(join(repo, top), join(src, top), {
      recursive: true,
      filter: (from) => !NOT_COPIED.has(relative(repo, from)),
    });
  }
  symlinkSync(join(repo, "node_modules"), join(src, "node_modules"), "dir");
  const { stdout, stderr } = await sh(["npm", "pack", "--json", "--pack-destination", tmp], src);
  packLog = stderr;
  packed = (JSON.parse(stdout) as (typeof packed)[])[0]!;
  tarball = join(tmp, packed.filename);

  videos = join(tmp, "videos");
  mkdirSync(videos);
  await makeVideo(videos, { codec: "h264", width: 96, height: 64, frames: 24, name: "a.mp4" });
  await makeVideo(videos, { codec: "h264", width: 96, height: 64, frames: 24, faststart: true, name: "b.mp4" });
}, 900_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("the npm package", () => {
  it("is packed with the prebuilt addon its sources build, without rebuilding it", () => {
    expect(packLog).toContain("[prebuild]");
    expect(packLog).toContain("is built from these sources");
  });

  it("ships the build, the prebuilt addon with its licences and the native sources, and no tests, benches or fixtures", () => {
    const files = packed.files.map((f) => f.path);
    expect(files).toContain("dist/sdk/index.js");
    expect(files).toContain("dist/sdk/cli/main.js");
    expect(files).toContain("bin/ec.js");
    // What the Python client's engine starts from (scripts/bundle-engine.mjs, run by the build).
    expect(files).toContain("dist/sdk/cli/engine.bundle.cjs");
    expect(files).toContain(`native/prebuilds/${platform}/ec_native.node`);
    expect(files).toContain(`native/prebuilds/${platform}/licenses/FFmpeg-LGPL-2.1.txt`);
    expect(files).toContain(`native/prebuilds/${platform}/licenses/NOTICE.txt`);
    // `ec build-native` compiles from these where no prebuilt fits.
    expect(files).toContain("native/binding.gyp");
    expect(files).toContain("native/src/binding.cc");
    expect(files).toContain("native/ffmpeg/build.sh");
    expect(files).toContain("native/ffmpeg/flags.cjs");
    // ec dev bundles the Worker from its sources at run time.
    expect(files).toContain("edge/index.ts");
    expect(files).toContain("wrangler.toml");
    expect(
      files.filter(
        (f) =>
          /^(test|bench|python|docs|scripts|\.ec|gpu-bundle|dist\/(test|bench))\//.test(f) ||
          f.endsWith(".map") ||
          f.endsWith("inputs.sha256") ||
          f.startsWith("native/build/"),
      ),
    ).toEqual([]);
    // The addon (7.3 MiB stripped) is most of it.
    expect(packed.size).toBeLessThan(12 * 1024 * 1024);
  });
});

describe.each(NPM_RELEASES)("installed with npm %s and its defaults", (release) => {
  let npm: NpmCli;
  let project: string;
  let installLog: string;

  beforeAll(async () => {
    npm = await npmCli(release);
    project = join(tmp, `project-npm-${release}`);
    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "ec-consumer", private: true, type: "module" }),
    );
    const installed = await sh(
      [...npm.npm, "install", "--prefer-offline", "--no-audit", "--no-fund", tarball],
      project,
    );
    installLog = installed.stdout + installed.stderr;
  }, 300_000);

  it("installs without its dev dependencies or the optional wrangler, and has no install script to approve", async () => {
    expect((await sh([...npm.npm, "--version"], project)).stdout.trim()).toBe(release);
    const installed = readdirSync(join(project, "node_modules"));
    expect(installed).toContain("ec");
    expect(installed).not.toContain("vitest");
    expect(installed).not.toContain("wrangler");
    expect(existsSync(join(project, "node_modules", "ec", "test"))).toBe(false);
    const pkg = JSON.parse(readFileSync(join(project, "node_modules", "ec", "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(Object.keys(pkg.scripts).filter((s) => /^(pre|post)?install$/.test(s))).toEqual([]);
    expect(installLog).not.toContain("install scripts not yet covered");
  });

  it("takes the shipped prebuilt: nothing is compiled at install", () => {
    expect(existsSync(join(project, "node_modules", "ec", "native", "prebuilds", platform, "ec_native.node"))).toBe(
      true,
    );
    expect(existsSync(join(project, "node_modules", "ec", "native", "build"))).toBe(false);
  });

  it("streams two clips with open() from the installed package", async () => {
    writeFileSync(
      join(project, "use.mjs"),
      `import { contactSheet, open } from "ec";
const ds = await open(process.argv[2], { frames: 4, batch: 1, limit: 2, shuffle: false });
const seen = [];
for await (const batch of ds) {
  const png = contactSheet(batch.clips, batch.decoded).png();
  seen.push({ key: batch.clips[0].key, shape: batch.frames.shape, png: Buffer.from(png.subarray(1, 4)).toString() });
}
await ds.close();
console.log(JSON.stringify({ seen, stats: ds.stats() }));
`,
    );
    const { stdout } = await sh([process.execPath, "use.mjs", videos], project);
    const { seen, stats } = JSON.parse(stdout) as {
      seen: { key: string; shape: number[]; png: string }[];
      stats: { clips: number; device: string };
    };
    expect(seen).toHaveLength(2);
    for (const s of seen) expect(s).toMatchObject({ shape: [1, 4, 64, 96, 3], png: "PNG" });
    expect(stats.clips).toBe(2);
    expect(stats.device).toBe("cpu");
  });

  it("streams two clips with `npx ec stream` from the installed bin, and draws the first batch", async () => {
    const preview = join(project, "first.png");
    const { stdout } = await sh(
      [
        ...npm.npx,
        "--no-install",
        "ec",
        "stream",
        videos,
        "--frames",
        "4",
        "--limit",
        "2",
        "--batch",
        "2",
        "--preview",
        preview,
        "--json",
      ],
      project,
    );
    const stats = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
      clips: number;
      frames: number;
      errors: Record<string, number>;
    };
    expect(stats).toMatchObject({ clips: 2, frames: 8, errors: {}, preview });
    const probe = await sh(
      ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", preview],
      project,
    );
    expect(probe.stdout.trim()).toBe("png,398,162");
  });
});
