#!/usr/bin/env node
// The `ec` command: runs the compiled CLI (`npm run build`, or `npm start`/`npm test`, builds it).
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const main = new URL("../dist/sdk/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write("ec: the CLI is not built yet; run `npm run setup` (or `npm run build`) first\n");
  process.exit(1);
}

/**
 * Runs `ec engine` from its bundle (scripts/bundle-engine.mjs) with V8's code cache beside it:
 * compiled once, then each engine the Python client starts skips parsing and compiling. The
 * cache is written when the first engine exits (where dist/ is writable), and V8 rejects one
 * that does not match the bundle.
 */
async function runEngineBundle(bundle, argv) {
  const cacheFile = bundle.replace(/\.cjs$/, ".cache");
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // None yet.
  }
  const source = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, "utf8")}\n})`;
  const script = new Script(source, {
    filename: bundle,
    cachedData,
  });
  if (!cachedData || script.cachedDataRejected)
    process.once("exit", () => {
      try {
        const partial = `${cacheFile}.${process.pid}`;
        writeFileSync(partial, script.createCachedData());
        renameSync(partial, cacheFile);
      } catch {
        // A read-only install runs without the cache.
      }
    });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return module.exports(argv);
}

// `ec engine` (what the Python client starts) runs from one bundled file when it is as new as
// the build; EC_ENGINE_BUNDLE=0 loads the modules instead.
const bundle = fileURLToPath(new URL("../dist/sdk/cli/engine.bundle.cjs", import.meta.url));
const bundled =
  process.argv[2] === "engine" &&
  process.env.EC_ENGINE_BUNDLE !== "0" &&
  existsSync(bundle) &&
  statSync(bundle).mtimeMs >= statSync(fileURLToPath(main)).mtimeMs;
if (bundled) process.exitCode = await runEngineBundle(bundle, process.argv.slice(3));
else {
  const { run } = await import(main.href);
  process.exitCode = await run(process.argv.slice(2));
}
