#!/usr/bin/env node
// The Python that runs the tests needing torch >= 2 (torchdata's StatefulDataLoader): a virtual
// environment made from python/requirements-torch2.lock once per machine, under
// ${XDG_CACHE_HOME:-~/.cache}/ec/venv-<hash>, keyed by the lock and the base Python. Debian's
// python3-torch (1.13) stays the Python of every other test. Run alone, it prints that Python's
// path, making the environment first if needed (minutes: torch's wheels from PyPI).
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findPython } from "./python-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const TORCH2_LOCK = join(root, "python", "requirements-torch2.lock");
const PROBE = "import torch, torchdata.stateful_dataloader, numpy, pytest";
const DONE = ".ec-complete";

function log(msg) {
  process.stderr.write(`[torch2-env] ${msg}\n`);
}

function baseVersion(python) {
  const r = spawnSync(python, ["-c", "import sys; print(sys.version)"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "";
}

/** Where the environment for this lock and base Python lives (it may not exist yet). */
export function torch2Dir(python = findPython()) {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const hash = createHash("sha256")
    .update(readFileSync(TORCH2_LOCK))
    .update(`\0${python}\0${baseVersion(python)}`)
    .digest("hex")
    .slice(0, 16);
  return join(cache, "ec", `venv-${hash}`);
}

function works(python) {
  return spawnSync(python, ["-c", PROBE], { stdio: "ignore" }).status === 0;
}

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
 * Python with venv, no network to PyPI). Made in a folder of its own, then renamed into place,
 * so an interrupted build is never taken for a finished one.
 */
export function torch2Python() {
  const base = findPython();
  if (!base) throw new Error("no base Python with venv and ensurepip (node scripts/setup.mjs --python)");
  const dir = torch2Dir(base);
  const python = join(dir, "bin", "python");
  if (existsSync(join(dir, DONE)) && works(python)) return python;
  rmSync(dir, { recursive: true, force: true });
  const partial = `${dir}.partial-${process.pid}`;
  mkdirSync(dirname(dir), { recursive: true });
  removeAbandoned(dir);
  rmSync(partial, { recursive: true, force: true });
  log(`making ${dir} from ${TORCH2_LOCK} (once per machine: minutes, about 5.4 GB)`);
  try {
    run(base, ["-m", "venv", partial]);
    const py = join(partial, "bin", "python");
    run(py, [
      "-m",
      "pip",
      "install",
      "--quiet",
      "--disable-pip-version-check",
      "--no-input",
      "--no-deps",
      "-r",
      TORCH2_LOCK,
    ]);
    run(py, ["-m", "pip", "check", "--disable-pip-version-check"]);
    if (!works(py)) throw new Error(`${py} cannot import torch, torchdata, numpy and pytest`);
    writeFileSync(join(partial, DONE), `${readFileSync(TORCH2_LOCK, "utf8")}`);
    renameSync(partial, dir);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    // Another build of the same environment finished first: use that one.
    if (!(existsSync(join(dir, DONE)) && works(python))) throw err;
  }
  if (!works(python)) throw new Error(`${python} cannot import torch, torchdata, numpy and pytest`);
  return python;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    process.stdout.write(`${torch2Python()}\n`);
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
