#!/usr/bin/env node
// Fails when a doc names a file or folder of the repository that does not exist, so the docs
// cannot drift from the tree unseen. Checked: markdown links, and every `code span` that is a
// path (it has a slash and starts at a top-level folder, or names a source file with its part's
// folder left out, as docs/ARCHITECTURE.md does). Ignored: URLs, placeholders (`{key}`, `<dir>`,
// `*`), and paths git ignores (build outputs such as dist/ or .ec/). bench/HISTORY.md is left
// out: its dated logs describe the tree of their day.
// Usage: node scripts/check-doc-paths.mjs [DOC.md ...]
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const git = (...args) => execFileSync("git", args, { cwd: root, encoding: "utf8" });
const tracked = git("ls-files", "--cached", "--others", "--exclude-standard").split("\n").filter(Boolean);
const topLevel = new Set(tracked.filter((p) => p.includes("/")).map((p) => p.split("/")[0]));
const SOURCE = /\.(ts|mjs|cjs|js|cc|h|cu|py|sh|gyp)$/;

const docs =
  process.argv.length > 2
    ? process.argv.slice(2)
    : tracked.filter(
        (p) =>
          p.endsWith(".md") && !p.startsWith("node_modules/") && p !== "bench/HISTORY.md" && !p.includes("/fixtures/"),
      );

/** Ignored by git, as a file or (for a path not on disk, whose kind git cannot see) as a folder. */
function ignored(path) {
  return [path, `${path}/`].some((p) => {
    try {
      git("check-ignore", "-q", "--no-index", p);
      return true;
    } catch {
      return false;
    }
  });
}

const exists = (path) => existsSync(join(root, path));
const endsAnywhere = (suffix) => tracked.some((p) => p === suffix || p.endsWith(`/${suffix}`));

/** Why `token`, named in `doc`, is not a path of the tree; undefined when it is, or is no path. */
function checkSpan(token) {
  if (/\s|:\/\/|[{}<>*$|=?,;()[\]…]|^[-/.~@]|^\w+:/.test(token) && !token.startsWith("./")) return undefined;
  const path = normalize(token.replace(/^\.\//, "")).replace(/\/$/, "");
  const first = path.split("/")[0];
  if (path.includes("/") && topLevel.has(first)) {
    if (exists(path) || ignored(path)) return undefined;
    return "no such file or folder";
  }
  if (!SOURCE.test(path)) return undefined;
  if (endsAnywhere(path) || ignored(path)) return undefined;
  return path.includes("/") ? "no tracked file ends with this path" : "no tracked file has this name";
}

function checkLink(doc, target) {
  if (/^[a-z]+:|^#|^\/\//i.test(target)) return undefined;
  const path = normalize(join(dirname(doc), decodeURI(target.split("#")[0])));
  if (path.startsWith("..") || exists(path) || ignored(path)) return undefined;
  return "link to a missing file";
}

const failures = [];
for (const doc of docs) {
  let fenced = false;
  readFileSync(join(root, doc), "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (line.trimStart().startsWith("```")) fenced = !fenced;
      if (fenced) return;
      const found = [];
      for (const m of line.matchAll(/`([^`\n]+)`/g)) found.push([m[1], checkSpan(m[1])]);
      for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) found.push([m[1], checkLink(doc, m[1])]);
      for (const [what, why] of found) if (why) failures.push(`${doc}:${i + 1}: ${what}: ${why}`);
    });
}
if (failures.length > 0) {
  process.stderr.write(`Docs name paths that do not exist (${failures.length}):\n${failures.join("\n")}\n`);
  process.exit(1);
}
process.stdout.write(`doc paths: ${docs.length} docs checked, every path they name exists\n`);
