#!/usr/bin/env node
// Installs what `npm start` and `npm test` need on a fresh Debian/Ubuntu machine,
// and does nothing (quickly) when everything is already there.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, statSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findPython, PYTHON_APT_PACKAGES } from "./python-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// The ffmpeg CLI makes test videos and reference framemd5s; the addon carries its own FFmpeg
// (native/ffmpeg/build.sh installs what that build needs).
const APT_PACKAGES = ["ffmpeg"];

function log(msg) {
  process.stderr.write(`[setup] ${msg}\n`);
}

function has(cmd, args = ["-version"]) {
  return spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
}

function run(cmd, args, opts = {}) {
  log(`${cmd} ${args.join(" ")}`);
  execFileSync(cmd, args, { stdio: ["ignore", "inherit", "inherit"], cwd: root, ...opts });
}

function missingSystemPackages() {
  return !has("ffmpeg") || !has("ffprobe") ? ["ffmpeg"] : [];
}

function ensureSystemPackages() {
  const missing = missingSystemPackages();
  if (missing.length === 0) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !has("apt-get", ["--version"])) {
    log(`missing system packages: ${missing.join(", ")}`);
    log(`run: sudo apt-get update && sudo apt-get install -y ${APT_PACKAGES.join(" ")}`);
    process.exit(1);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  run("apt-get", ["update", "-qq"], { env });
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...APT_PACKAGES], { env });
}

// The Python client's tests need numpy, torch and pytest; Debian's CPU builds spare a 2.5 GB wheel.
function ensurePython() {
  if (findPython()) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !has("apt-get", ["--version"])) {
    log("no Python with numpy, torch and pytest (for the Python client's tests)");
    log(`run: sudo apt-get install -y ${PYTHON_APT_PACKAGES.join(" ")} (or set EC_PYTHON to one that has them)`);
    process.exit(1);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  run("apt-get", ["update", "-qq"], { env });
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...PYTHON_APT_PACKAGES], { env });
}

function mtime(p) {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return 0;
  }
}

function newestUnder(dir, exts) {
  let newest = 0;
  if (!existsSync(dir)) return 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === "build" || entry.name === "node_modules") continue;
      newest = Math.max(newest, newestUnder(p, exts));
    } else if (exts.some((e) => entry.name.endsWith(e))) {
      newest = Math.max(newest, mtime(p));
    }
  }
  return newest;
}

function ensureNodeModules() {
  const stamp = join(root, "node_modules", ".package-lock.json");
  if (mtime(stamp) >= mtime(join(root, "package-lock.json"))) return;
  run("npm", ["ci", "--no-audit", "--no-fund"]);
}

function ensureBuild() {
  const out = join(root, "dist", ".stamp");
  const src = Math.max(
    ...["common", "origin-cache", "sdk", "native"].map((d) => newestUnder(join(root, d), [".ts"])),
    mtime(join(root, "tsconfig.build.json")),
  );
  if (mtime(out) < src || src === 0) {
    run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"]);
    execFileSync("touch", [out]);
  }
  // `ec engine` in one file (bin/ec.js keeps its V8 code cache beside it), which the Python client's child loads instead of hundreds of modules.
  const cli = join(root, "dist", "sdk", "cli");
  if (mtime(join(cli, "engine.bundle.cjs")) < mtime(join(cli, "main.js")))
    run(process.execPath, [join(root, "scripts", "bundle-engine.mjs")]);
}

function ensureNative() {
  if (!existsSync(join(root, "native", "binding.gyp"))) return;
  // The minimal static FFmpeg the addon links: built once per machine, cached outside the clone.
  // (binding.gyp asks for it too; first here, so its log is not swallowed by gyp.)
  execFileSync("bash", [join(root, "native", "ffmpeg", "build.sh")], { stdio: ["ignore", "ignore", "inherit"] });
  const addon = join(root, "native", "build", "Release", "ec_native.node");
  const src = newestUnder(join(root, "native"), [".cc", ".h", ".cu", ".gyp", ".cjs", ".sh", ".txt"]);
  if (mtime(addon) >= src) return;
  // Headers installed next to this node (distro packages, offline hosts) spare node-gyp a download.
  const prefix = join(dirname(process.execPath), "..");
  const nodedir = existsSync(join(prefix, "include", "node", "node_api.h")) ? [`--nodedir=${prefix}`] : [];
  run(
    process.execPath,
    [join(root, "node_modules", "node-gyp", "bin", "node-gyp.js"), "rebuild", "-j", "max", ...nodedir],
    {
      cwd: join(root, "native"),
    },
  );
}

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 18)) {
  log(`Node >= 20.18 is required but this is ${process.versions.node}`);
  process.exit(1);
}
ensureSystemPackages();
if (process.argv.includes("--python")) ensurePython();
ensureNodeModules();
ensureBuild();
ensureNative();
