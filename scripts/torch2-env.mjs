#!/usr/bin/env node
// The Python that runs the tests needing torch >= 2 (torchdata's StatefulDataLoader): a virtual
// environment made from python/requirements-torch2.lock once per machine, under
// ${XDG_CACHE_HOME:-~/.cache}/ec/venv-<hash>, keyed by the lock and the base Python. Debian's
// python3-torch (1.13) stays the Python of every other test. Run alone, it prints that Python's
// path, making the environment first if needed (minutes: torch's wheels from PyPI).
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { lockedPython, lockedVenvDir } from "./locked-venv.mjs";
import { findPython } from "./python-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const TORCH2_LOCK = join(root, "python", "requirements-torch2.lock");
const PROBE = "import torch, torchdata.stateful_dataloader, numpy, pytest";

function log(msg) {
  process.stderr.write(`[torch2-env] ${msg}\n`);
}

/** Where the environment for this lock and base Python lives (it may not exist yet). */
export function torch2Dir(python = findPython()) {
  return lockedVenvDir(TORCH2_LOCK, python);
}

/** The environment's python, made first when missing; throws when it cannot be made. */
export function torch2Python() {
  return lockedPython({
    lock: TORCH2_LOCK,
    probe: PROBE,
    what: "import torch, torchdata, numpy and pytest",
    size: "about 5.4 GB",
    log,
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    process.stdout.write(`${torch2Python()}\n`);
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
