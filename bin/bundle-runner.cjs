"use strict";
// Runs the `ec` CLI from its one-file bundle (scripts/bundle-engine.mjs) with V8's code cache
// beside it: compiled once, then each engine the Python client starts skips parsing and
// compiling. bin/ec.js uses it for `ec engine`; the Python wheel ships this file as the
// launcher of its `ec` (the bundle, engine.bundle.cjs, lies beside it there).
const { readFileSync, renameSync, writeFileSync } = require("node:fs");
const { createRequire } = require("node:module");
const { dirname, join } = require("node:path");
const { Script } = require("node:vm");

/**
 * Runs the bundle's CLI with `argv` (`["engine"]`, `["stream", DIR]`, ...) and resolves to its
 * exit code. The cache is written when the first run exits (where the folder is writable), and
 * V8 rejects one that does not match the bundle.
 */
function runBundle(bundle, argv) {
  const cacheFile = bundle.replace(/\.cjs$/, ".cache");
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // None yet.
  }
  const source = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, "utf8")}\n})`;
  const script = new Script(source, { filename: bundle, cachedData });
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

module.exports = { runBundle };

if (require.main === module) {
  runBundle(join(__dirname, "engine.bundle.cjs"), process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
