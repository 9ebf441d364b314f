#!/usr/bin/env node
// Builds the self-contained addon users get without a compiler: linked against the minimal
// static FFmpeg (native/ffmpeg/build.sh), with the CUDA backend and kernels (CUDA's headers and
// nvcc from native/cuda/toolkit.sh; EC_NO_CUDA=1 leaves them out), stripped, and copies it with
// the licences of what it links to native/prebuilds/linux-x64/. It builds in .ec/prebuild so
// native/build (the developer build the tests load) is left alone.
// Usage: npm run native:prebuild [-- --out DIR]
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: { out: { type: "string", default: join(root, "native", "prebuilds", "linux-x64") } },
});
const require = createRequire(import.meta.url);
const { unexpectedLibraries } = require("../native/ffmpeg/check-linked.cjs");

function log(msg) {
  process.stderr.write(`[prebuild] ${msg}\n`);
}

if (process.platform !== "linux" || process.arch !== "x64") {
  log(`Expected linux-x64 but this is ${process.platform}-${process.arch}`);
  process.exit(1);
}
const start = Date.now();
const env = { ...process.env };
if (!process.env.EC_NO_CUDA) {
  env.CUDA_HOME = execFileSync("bash", [join(root, "native", "cuda", "toolkit.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  log(`CUDA_HOME=${env.CUDA_HOME}`);
}
execFileSync("bash", [join(root, "native", "ffmpeg", "build.sh")], { stdio: ["ignore", "ignore", "inherit"] });

const work = join(root, ".ec", "prebuild", "native");
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
for (const entry of ["binding.gyp", "find-cuda.cjs", "embed-kernels.cjs", "src", "ffmpeg"]) {
  cpSync(join(root, "native", entry), join(work, entry), { recursive: true });
}
const nodePrefix = join(dirname(process.execPath), "..");
const nodedir = existsSync(join(nodePrefix, "include", "node", "node_api.h")) ? [`--nodedir=${nodePrefix}`] : [];
execFileSync(
  process.execPath,
  [join(root, "node_modules", "node-gyp", "bin", "node-gyp.js"), "rebuild", "-j", "max", "--loglevel=warn", ...nodedir],
  {
    cwd: work,
    env,
    stdio: ["ignore", "ignore", "inherit"],
  },
);

const built = join(work, "build", "Release", "ec_native.node");
const extra = unexpectedLibraries(built);
if (extra.length > 0) {
  log(`Expected the addon to need only libc, libm, libstdc++ and libgcc but it needs ${extra.join(", ")}`);
  process.exit(1);
}
mkdirSync(values.out, { recursive: true });
const addon = join(values.out, "ec_native.node");
execFileSync("strip", ["--strip-unneeded", "-o", addon, built]);
rmSync(join(values.out, "licenses"), { recursive: true, force: true });
cpSync(join(work, "build", "Release", "licenses"), join(values.out, "licenses"), { recursive: true });
log(`${addon} (${(Date.now() - start) / 1000} s)`);
