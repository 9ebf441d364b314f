#!/usr/bin/env node
// Fails when a part imports another part's internals: each of native/, origin-cache/, sdk/ and
// edge/ is reached from outside only through its index.ts (common/ is shared by all, and is
// imported file by file). Tests, benches and scripts may reach in; the parts may not.
// Usage: node scripts/check-part-imports.mjs
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PARTS = ["native", "origin-cache", "sdk", "edge"];
const partOf = (path) => [...PARTS, "common"].find((p) => path === p || path.startsWith(`${p}/`));

const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.ts"], {
  cwd: root,
  encoding: "utf8",
})
  .split("\n")
  .filter((p) => p && !p.endsWith(".d.ts") && partOf(p));

const failures = [];
for (const file of files) {
  const from = partOf(file);
  const source = readFileSync(join(root, file), "utf8");
  for (const m of source.matchAll(/(?:from\s+|import\s*\(\s*)"(\.{1,2}\/[^"]+)"/g)) {
    const target = normalize(join(dirname(file), m[1]));
    const to = partOf(target);
    if (!to || to === from || to === "common") continue;
    if (target !== `${to}/index.js` && target !== `${to}/index.ts`)
      failures.push(`${file}: imports ${m[1]} (inside ${to}/); import ${to}/index.ts instead`);
  }
}
if (failures.length > 0) {
  process.stderr.write(`Parts reach into other parts (${failures.length}):\n${failures.join("\n")}\n`);
  process.exit(1);
}
process.stdout.write(`part imports: ${files.length} files, every import of another part goes through its index.ts\n`);
