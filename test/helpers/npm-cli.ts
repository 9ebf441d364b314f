/**
 * A given npm release to run a test with: the npm on PATH when it is that release, else the
 * release installed once per machine from the npm registry into
 * ${XDG_CACHE_HOME:-~/.cache}/ec/npm-<version> (as scripts/node24.mjs does for Node).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

export interface NpmCli {
  version: string;
  /** `npm ARGS` is `[...npm, ...ARGS]`; `npx ARGS` is `[...npx, ...ARGS]`. */
  npm: string[];
  npx: string[];
}

/**
 * @example
 * const npm10 = await npmCli("10.9.9");
 * await exec(npm10.npm[0]!, [...npm10.npm.slice(1), "install", tgz], { cwd: project });
 */
export async function npmCli(version: string): Promise<NpmCli> {
  const onPath = await exec("npm", ["--version"]).then(
    ({ stdout }) => stdout.trim(),
    () => "",
  );
  if (onPath === version) return { version, npm: ["npm"], npx: ["npx"] };
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "ec");
  const prefix = join(cache, `npm-${version}`);
  const bin = join(prefix, "node_modules", "npm", "bin");
  if (!existsSync(join(bin, "npm-cli.js"))) {
    mkdirSync(cache, { recursive: true });
    const partial = mkdtempSync(`${prefix}.partial-`);
    try {
      await exec("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", partial, `npm@${version}`]);
      rmSync(prefix, { recursive: true, force: true });
      renameSync(partial, prefix);
    } catch (err) {
      // Another test process may have finished the same install first.
      if (!existsSync(join(bin, "npm-cli.js"))) throw err;
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  return {
    version,
    npm: [process.execPath, join(bin, "npm-cli.js")],
    npx: [process.execPath, join(bin, "npx-cli.js")],
  };
}
