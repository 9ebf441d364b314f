// A virtual environment made from a lock file (exact pins, installed --no-deps) once per machine,
// under ${XDG_CACHE_HOME:-~/.cache}/ec/venv-<hash>, keyed by the lock and the base Python. The
// torch-2 test environment (torch2-env.mjs) and the bench's peers (bench-peers-env.mjs) use it.
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { findPython } from "./python-env.mjs";

const DONE = ".ec-complete";

function baseVersion(python) {
  const r = spawnSync(python, ["-c", "import sys; print(sys.version)"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "";
}

/** Where the environment for `lock` and the base Python lives (it may not exist yet). */
export function lockedVenvDir(lock, python = findPython()) {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const hash = createHash("sha256")
    .update(readFileSync(lock))
    .update(`\0${python}\0${baseVersion(python)}`)
    .digest("hex")
    .slice(0, 16);
  return join(cache, "ec", `venv-${hash}`);
}

/** "" when `python` runs `probe` (none: nothing to run), else what it printed when it failed. */
function probeOf(python, probe) {
  if (!probe) return "";
  const r = spawnSync(python, ["-c", probe], { encoding: "utf8" });
  if (r.status === 0) return "";
  return (r.stderr || r.stdout || "").trim() || `exit ${r.status}`;
}

/** The last line of a failure: a traceback's exception. */
const lastLine = (text) => text.split("\n").pop() ?? text;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

/** Removes what builds of this environment that were killed left behind (gigabytes each). */
function removeAbandoned(dir) {
  const prefix = `${basename(dir)}.partial-`;
  for (const name of readdirSync(dirname(dir))) {
    const pid = Number(name.slice(prefix.length));
    if (name.startsWith(prefix) && Number.isInteger(pid) && !alive(pid)) {
      rmSync(join(dirname(dir), name), { recursive: true, force: true });
    }
  }
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited with ${r.status ?? r.signal}`);
}

/**
 * The environment's python, made first when missing; throws when it cannot be made (no base
 * Python with venv, no network to PyPI, `probe` fails in it). Made in a folder of its own, then
 * renamed into place, so an interrupted build is never taken for a finished one. `systemProbe`
 * checks what the environment needs from the system (FFmpeg's libraries): when it fails the
 * environment is kept and the error says `explain(lastLine, wholeOutput)`. `base` is the Python
 * the environment is made from (default: the test suite's, findPython()). `log` gets progress; `size` is
 * said before a build.
 */
export function lockedPython({
  lock,
  probe,
  what,
  size,
  log,
  systemProbe = "",
  explain = (line, _output) => line,
  base = findPython(),
}) {
  if (!base) throw new Error("no base Python with venv and ensurepip (node scripts/setup.mjs --python)");
  const dir = lockedVenvDir(lock, base);
  const python = join(dir, "bin", "python");
  const system = () => {
    const failed = probeOf(python, systemProbe);
    if (failed) throw new Error(`${python} cannot ${what}: ${explain(lastLine(failed), failed)}`);
    return python;
  };
  if (existsSync(join(dir, DONE)) && !probeOf(python, probe)) return system();
  rmSync(dir, { recursive: true, force: true });
  const partial = `${dir}.partial-${process.pid}`;
  mkdirSync(dirname(dir), { recursive: true });
  removeAbandoned(dir);
  rmSync(partial, { recursive: true, force: true });
  log(`making ${dir} from ${lock} (once per machine: minutes, ${size})`);
  try {
    run(base, ["-m", "venv", partial]);
    const py = join(partial, "bin", "python");
    run(py, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input", "--no-deps", "-r", lock]);
    run(py, ["-m", "pip", "check", "--disable-pip-version-check"]);
    const failed = probeOf(py, probe);
    if (failed) throw new Error(`${py} cannot ${what}: ${lastLine(failed)}`);
    writeFileSync(join(partial, DONE), `${readFileSync(lock, "utf8")}`);
    renameSync(partial, dir);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    // Another build of the same environment finished first: use that one.
    if (!(existsSync(join(dir, DONE)) && !probeOf(python, probe))) throw err;
  }
  const failed = probeOf(python, probe);
  if (failed) throw new Error(`${python} cannot ${what}: ${lastLine(failed)}`);
  return system();
}
