import { existsSync, readFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

/**
 * The folder of ec's own package.json: found by walking up from this file, so it is the same
 * whether the code runs from sources (vitest) or from dist/.
 *
 * @example
 * join(projectRoot(), "wrangler.toml");
 */
export function projectRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "ec") {
      cached = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`No ec package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/**
 * Where ec keeps local state (`.ec/`: samples, the demo's R2, pictures): the checkout itself,
 * or the current folder where ec runs as a package installed under node_modules.
 *
 * @example
 * join(stateRoot(), ".ec", "samples");
 */
export function stateRoot(root = projectRoot(), cwd = process.cwd()): string {
  return root.split(sep).includes("node_modules") ? cwd : root;
}

/**
 * The folder of the local edge's `.dev.vars`: the checkout (git-ignored there), or `.ec/` of the
 * current folder where ec is installed, so that no secret is written into `node_modules/ec/`
 * (where it would be lost on reinstall and shared by every project using that copy).
 *
 * @example
 * ensureDevVars(varsRoot());
 */
export function varsRoot(root = projectRoot(), cwd = process.cwd()): string {
  const state = stateRoot(root, cwd);
  return state === root ? root : join(state, ".ec");
}
