import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

export const ROOT = join(import.meta.dirname, "..", "..");
const exec = promisify(execFile);

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (e.name.endsWith(".ts")) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

/** Builds dist/ when it is missing or older than the sources the CLI runs. */
export async function ensureBuilt(): Promise<void> {
  const stamp = join(ROOT, "dist", "sdk", "cli", "main.js");
  const src = Math.max(newest(join(ROOT, "sdk")), newest(join(ROOT, "common")), newest(join(ROOT, "origin-cache")));
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= src) return;
  await exec(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], {
    cwd: ROOT,
  });
}

/** Environment for child `ec` runs: nothing inherited that would change where they point. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const k of ["EC_EDGE", "EC_TOKEN", "EC_SIGNING_KEY"]) if (!(k in extra)) delete env[k];
  return env;
}

/** Runs `ec ARGS` to completion. */
export async function ec(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, "bin", "ec.js"), ...args], { cwd: ROOT, env }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === "number"
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running `ec ARGS` in its own process group. */
export function ecSpawn(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): ChildProcess {
  return spawn(process.execPath, [join(ROOT, "bin", "ec.js"), ...args], {
    cwd: ROOT,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Resolves with the first line the child writes to stdout (rejects if it exits first). */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once("exit", (code) => reject(new Error(`exited ${code} before a line: ${err}`)));
  });
}
