#!/usr/bin/env node
// Builds the self-contained addon users get without a compiler: linked against the minimal
// static FFmpeg (native/ffmpeg/build.sh), with the CUDA backend and kernels (CUDA's headers and
// nvcc from native/cuda/toolkit.sh; EC_NO_CUDA=1 leaves them out), stripped, and copies it with
// the licences of what it links to native/prebuilds/linux-x64/. It builds in .ec/prebuild so
// native/build (the developer build the tests load) is left alone.
// With --if-stale (what `npm pack` runs) it builds only when the addon is missing or was built
// from other inputs than these: a hash of the native sources, this script, node-addon-api's
// version and the build's EC_* settings is kept beside the addon in inputs.sha256; a build of the
// same inputs that another clone made on this machine (kept under ~/.cache/ec) is copied instead.
// Usage: npm run native:prebuild [-- --out DIR] [--if-stale]
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    out: { type: "string", default: join(root, "native", "prebuilds", "linux-x64") },
    "if-stale": { type: "boolean", default: false },
  },
});
const require = createRequire(import.meta.url);
const { unexpectedLibraries } = require("../native/ffmpeg/check-linked.cjs");

function log(msg) {
  process.stderr.write(`[prebuild] ${msg}\n`);
}

/** Every file under `dir`, sorted, as paths relative to the repository. */
function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/** What the addon is built from: contents (not times), so a copy of the sources hashes the same. */
function inputsHash() {
  const native = (p) => join(root, "native", p);
  const files = [
    ...["binding.gyp", "find-cuda.cjs", "embed-kernels.cjs", "cuda/toolkit.sh"].map((p) => relative(root, native(p))),
    ...filesUnder(native("src")),
    ...filesUnder(native("ffmpeg")),
    "scripts/prebuild.mjs",
  ];
  const hash = createHash("sha256");
  for (const file of files)
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(root, file)))
      .update("\0");
  hash.update(`node-addon-api ${require("node-addon-api/package.json").version}\0`);
  for (const name of ["EC_NO_CUDA", "EC_NO_KERNELS", "EC_CUDA_ARCHS"])
    hash.update(`${name}=${process.env[name] ?? ""}\0`);
  return hash.digest("hex");
}

const addon = join(values.out, "ec_native.node");
const stamp = join(values.out, "inputs.sha256");
const inputs = inputsHash();
// Builds of other clones on this machine, by their inputs (a fresh clone in CI has none of its own).
const kept = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "ec",
  `prebuilt-linux-x64-${inputs.slice(0, 16)}`,
);
if (values["if-stale"]) {
  if (existsSync(addon) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === inputs) {
    log(`${addon} is built from these sources`);
    process.exit(0);
  }
  if (existsSync(join(kept, "ec_native.node"))) {
    rmSync(values.out, { recursive: true, force: true });
    cpSync(kept, values.out, { recursive: true });
    log(`${addon}: this machine's build of these sources`);
    process.exit(0);
  }
}
if (process.platform !== "linux" || process.arch !== "x64") {
  log(`Expected linux-x64 but this is ${process.platform}-${process.arch}`);
  process.exit(1);
}
const start = Date.now();
log(`building ${addon}${values["if-stale"] ? " (missing, or built from other sources)" : ""}`);
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
rmSync(stamp, { force: true });
execFileSync("strip", ["--strip-unneeded", "-o", addon, built]);
rmSync(join(values.out, "licenses"), { recursive: true, force: true });
cpSync(join(work, "build", "Release", "licenses"), join(values.out, "licenses"), { recursive: true });
writeFileSync(stamp, `${inputs}\n`);
log(`${addon} (${(Date.now() - start) / 1000} s)`);
const partial = `${kept}.partial-${process.pid}`;
cpSync(values.out, partial, { recursive: true });
try {
  renameSync(partial, kept);
} catch {
  // Another clone kept a build of the same inputs first.
  rmSync(partial, { recursive: true, force: true });
}
