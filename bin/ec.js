#!/usr/bin/env node
// The `ec` command: runs the compiled CLI (`npm run build`, or `npm start`/`npm test`, builds it).
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const main = new URL("../dist/sdk/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write("ec: the CLI is not built yet; run `npm run setup` (or `npm run build`) first\n");
  process.exit(1);
}

// `ec engine` (what the Python client starts) and `ec stream` run from the CLI bundled in one
// file, with V8's code cache beside it (bundle-runner.cjs), when it is as new as the build: half
// a second of CPU less per start than loading the modules. EC_ENGINE_BUNDLE=0 loads the modules.
const BUNDLED = new Set(["engine", "stream"]);
const bundle = fileURLToPath(new URL("../dist/sdk/cli/engine.bundle.cjs", import.meta.url));
const bundled =
  BUNDLED.has(process.argv[2]) &&
  process.env.EC_ENGINE_BUNDLE !== "0" &&
  existsSync(bundle) &&
  statSync(bundle).mtimeMs >= statSync(fileURLToPath(main)).mtimeMs;
if (bundled) {
  const { runBundle } = createRequire(import.meta.url)("./bundle-runner.cjs");
  process.exitCode = await runBundle(bundle, process.argv.slice(2));
} else {
  const { run } = await import(main.href);
  process.exitCode = await run(process.argv.slice(2));
}
