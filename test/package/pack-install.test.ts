/**
 * The package as a user gets it: `npm pack` of a copy of the sources (dist/ built by prepack,
 * the local addon shipped as the prebuilt), installed into a fresh project from the tarball
 * (the registry only, through the npm cache), then two clips streamed from a local folder with
 * `import { open } from "ec"` and with `npx ec stream`.
 */
import { execFile } from "node:child_process";
import {
  copyFileSync,
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

const exec = promisify(execFile);
const repo = resolve(import.meta.dirname, "..", "..");
const addon = join(repo, "native", "build", "Release", "ec_native.node");
/** Builds and local state of the checkout stay out of the copy that is packed. */
const NOT_COPIED = new Set(["native/build", "native/prebuilds"]);

/** What packing needs: package.json and the tsconfigs, and the top folders of `files` and of the build's sources. */
function packInputs(): string[] {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { files: string[] };
  const build = JSON.parse(readFileSync(join(repo, "tsconfig.build.json"), "utf8")) as { include: string[] };
  const tops = [...pkg.files, ...build.include].filter((f) => !f.startsWith("!")).map((f) => f.split("/")[0]!);
  return [...new Set(["package.json", "README.md", "tsconfig.base.json", "tsconfig.build.json", ...tops])].filter(
    (f) => f !== "dist" && existsSync(join(repo, f)),
  );
}

/** The environment without the npm_* variables of an npm that may have started vitest. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== "EC_NATIVE_PATH"),
  );
  return { ...env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" };
}

async function sh(cmd: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await exec(cmd, args, { cwd, env: cleanEnv(), maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} failed in ${cwd}: ${e.message}\n${e.stdout ?? ""}\n${e.stderr ?? ""}`);
  }
}

let tmp: string;
let project: string;
let videos: string;
let packed: { filename: string; files: { path: string }[] };
let installLog: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ec-pack-"));
  const src = join(tmp, "src");
  for (const top of packInputs()) {
    cpSync(join(repo, top), join(src, top), {
      recursive: true,
      filter: (from) => !NOT_COPIED.has(relative(repo, from)),
    });
  }
  symlinkSync(join(repo, "node_modules"), join(src, "node_modules"), "dir");
  // The addon users get is the prebuilt in the tarball; this machine's build stands in for it.
  mkdirSync(join(src, "native", "prebuilds", `${process.platform}-${process.arch}`), { recursive: true });
  copyFileSync(addon, join(src, "native", "prebuilds", `${process.platform}-${process.arch}`, "ec_native.node"));

  const { stdout } = await sh("npm", ["pack", "--json", "--pack-destination", tmp], src);
  packed = (JSON.parse(stdout) as (typeof packed)[])[0]!;

  project = join(tmp, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "ec-consumer", private: true, type: "module" }));
  const installed = await sh(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--foreground-scripts", join(tmp, packed.filename)],
    project,
  );
  installLog = installed.stdout + installed.stderr;

  videos = join(tmp, "videos");
  mkdirSync(videos);
  await makeVideo(videos, { codec: "h264", width: 96, height: 64, frames: 24, name: "a.mp4" });
  await makeVideo(videos, { codec: "h264", width: 96, height: 64, frames: 24, faststart: true, name: "b.mp4" });
}, 240_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("the npm package", () => {
  it("ships the build, the native sources and the prebuilt, and no tests, benches or fixtures", () => {
    const files = packed.files.map((f) => f.path);
    expect(files).toContain("dist/sdk/index.js");
    expect(files).toContain("dist/sdk/cli/main.js");
    expect(files).toContain("bin/ec.js");
    // What the Python client's engine starts from (scripts/bundle-engine.mjs, run by the build).
    expect(files).toContain("dist/sdk/cli/engine.bundle.cjs");
    expect(files).toContain("native/binding.gyp");
    expect(files).toContain(`native/prebuilds/${process.platform}-${process.arch}/ec_native.node`);
    // ec dev bundles the Worker from its sources at run time.
    expect(files).toContain("edge/index.ts");
    expect(files).toContain("wrangler.toml");
    expect(
      files.filter(
        (f) => /^(test|bench|dist\/(test|bench))\//.test(f) || f.endsWith(".map") || f.startsWith("native/build/"),
      ),
    ).toEqual([]);
  });

  it("installs without its dev dependencies or the optional wrangler", () => {
    const installed = readdirSync(join(project, "node_modules"));
    expect(installed).toContain("ec");
    expect(installed).not.toContain("vitest");
    expect(installed).not.toContain("wrangler");
    expect(existsSync(join(project, "node_modules", "ec", "test"))).toBe(false);
  });

  it("takes the shipped prebuilt at install instead of compiling", () => {
    expect(installLog).toContain("[ec install] native addon: found a build that loads");
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
    const { stdout } = await sh(process.execPath, ["use.mjs", videos], project);
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
      "npx",
      [
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
      "ffprobe",
      ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", preview],
      project,
    );
    expect(probe.stdout.trim()).toBe("png,398,162");
  });
});
