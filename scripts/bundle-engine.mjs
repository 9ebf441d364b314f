#!/usr/bin/env node
// Bundles `ec engine` (what the Python client starts) from dist/ into one CommonJS file with
// esbuild, dist/sdk/cli/engine.bundle.cjs: the child then compiles one script (with V8's code
// cache, see bin/ec.js) instead of loading hundreds of modules (zod, undici, the SDK,
// origin-cache), which was most of its start-up. The native addon stays external
// (native/lib/load.ts finds it from there as from dist/native/lib). bin/ec.js runs it for
// `ec engine` when it is at least as new as dist/, else the unbundled CLI.
// Usage: node scripts/bundle-engine.mjs   (after tsc -p tsconfig.build.json; setup.mjs runs both)
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist", "sdk", "cli");

const outfile = join(cli, "engine.bundle.cjs");
await build({
  stdin: {
    contents: 'const { main } = require("./engine.js");\nmodule.exports = (argv) => main(argv);\n',
    resolveDir: cli,
    sourcefile: "engine-entry.js",
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
// A code cache of the previous bundle would only be rejected.
rmSync(join(cli, "engine.bundle.cache"), { force: true });
