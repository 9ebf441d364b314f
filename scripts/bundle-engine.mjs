#!/usr/bin/env node
// Bundles the `ec` CLI from dist/ into one CommonJS file with esbuild,
// dist/sdk/cli/engine.bundle.cjs, exporting `(argv) => exit code`: `ec engine` (what the Python
// client starts) then compiles one script (with V8's code cache, see bin/bundle-runner.cjs)
// instead of loading hundreds of modules (zod, undici, the SDK, origin-cache), which was most of
// its start-up. The whole CLI is in it (each command's modules run only when that command does),
// so the Python wheel (scripts/wheel.mjs) ships this one file as its `ec` too. The native addon
// stays external (native/lib/load.ts finds it from there as from dist/native/lib). bin/ec.js runs
// it for `ec engine` when it is at least as new as dist/, else the unbundled CLI.
// Usage: node scripts/bundle-engine.mjs   (after tsc -p tsconfig.build.json; setup.mjs runs both)
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist", "sdk", "cli");

const outfile = join(cli, "engine.bundle.cjs");
const { metafile } = await build({
  stdin: {
    contents: 'const { run } = require("./main.js");\nmodule.exports = (argv) => run(argv);\n',
    resolveDir: cli,
    sourcefile: "ec-entry.js",
    loader: "js",
  },
  outfile,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minify: true,
  // Error classes and the like keep their names in messages and logs.
  keepNames: true,
  legalComments: "none",
  logLevel: "warning",
  metafile: true,
  // Paths in the metafile relative to the checkout.
  absWorkingDir: root,
  // The ESM sources' import.meta.url (the addon's loader looks for the build from there).
  define: { "import.meta.url": "__ecModuleUrl" },
  banner: {
    js: [
      'const __ecModuleUrl = require("node:url").pathToFileURL(__filename).href;',
      "const __ecImport = (s) => Promise.resolve().then(() => { const m = require(s); return { ...m, default: m }; });",
    ].join("\n"),
  },
});
// A script compiled with vm has no import() of its own: the S3 client's few of Node's modules
// become require()s; anything else dynamically imported would fail at run time, so fail now.
const code = readFileSync(outfile, "utf8").replaceAll('import("node:', '__ecImport("node:');
const left = code.match(/\bimport\([^)]{0,60}\)/g);
if (left) throw new Error(`Expected only node: modules imported with import() but found ${left.join(", ")}`);
writeFileSync(outfile, code);
// The npm packages inside (legalComments drops their notices): the wheel carries their licences.
const packages = new Set();
for (const input of Object.keys(metafile.inputs)) {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.replaceAll("\\", "/"));
  if (m) packages.add(m[1]);
}
writeFileSync(join(cli, "engine.bundle.packages.json"), `${JSON.stringify([...packages].sort(), null, 1)}\n`);
// A code cache of the previous bundle would only be rejected.
rmSync(join(cli, "engine.bundle.cache"), { force: true });
