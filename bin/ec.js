#!/usr/bin/env node
// The `ec` command: runs the compiled CLI (`npm run build`, or `npm start`/`npm test`, builds it).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const main = new URL("../dist/sdk/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write("ec: the CLI is not built yet; run `npm run setup` (or `npm run build`) first\n");
  process.exit(1);
}
const { run } = await import(main.href);
process.exitCode = await run(process.argv.slice(2));
