#!/usr/bin/env node
// npm's `install` step for ec: use a native addon that loads (a local build, or the prebuilt
// shipped in native/prebuilds/<platform>-<arch>), else compile one from native/ with node-gyp.
// It never fails the install: without the addon, decoding throws the loader's actionable
// message, and the commands that need no decoder (push, cache, sign, dev) still work.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const loader = join(root, "dist", "native", "lib", "load.js");
const log = (msg) => process.stderr.write(`[ec install] ${msg}\n`);

if (!existsSync(loader)) {
  // A source checkout before its first build: `npm run setup` (npm start, npm test) builds both.
  log("no dist/ yet (a source checkout): `npm run setup` builds the addon");
  process.exit(0);
}
const { addonCandidates, loadFirst } = await import(pathToFileURL(loader).href);

function loads() {
  try {
    loadFirst(addonCandidates());
    return undefined;
  } catch (err) {
    return err;
  }
}

/** npm's own node-gyp (npm hands its path to scripts), else one installed next to ec. */
function nodeGyp() {
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp))
    return process.env.npm_config_node_gyp;
  try {
    return createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js");
  } catch {
    return undefined;
  }
}

const missingLibs = () =>
  ["libavcodec", "libavutil", "libswscale"].filter(
    (lib) => spawnSync("pkg-config", ["--exists", lib], { stdio: "ignore" }).status !== 0,
  );

if (loads() === undefined) {
  log("native addon: found a build that loads");
  process.exit(0);
}
const gyp = nodeGyp();
const missing = missingLibs();
if (!gyp) {
  log("native addon: no prebuilt fits and node-gyp is not available to build one");
} else if (missing.length > 0) {
  log(`native addon: no prebuilt fits, and pkg-config finds no ${missing.join(", ")} to build one against`);
} else {
  log("native addon: no prebuilt fits this platform; building it from native/ with node-gyp");
  // Headers installed next to this node (distro packages, offline hosts) spare node-gyp a download.
  const prefix = join(dirname(process.execPath), "..");
  const nodedir = existsSync(join(prefix, "include", "node", "node_api.h")) ? [`--nodedir=${prefix}`] : [];
  try {
    execFileSync(process.execPath, [gyp, "rebuild", "-j", "max", ...nodedir], {
      cwd: join(root, "native"),
      stdio: ["ignore", "inherit", "inherit"],
    });
  } catch {
    log("native addon: node-gyp failed (output above)");
  }
}
const error = loads();
if (error === undefined) {
  log("native addon: built and loads");
} else {
  log(`${error.message}\nThen run \`npm rebuild ec\`. Until then ec installs, but decoding throws this message.`);
}
