#!/usr/bin/env node
// Runs the Python client's tests (python/tests) with pytest against this checkout's engine.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findPython, PYTHON_APT_PACKAGES } from "./python-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const python = findPython();
if (!python) {
  process.stderr.write(
    `[test:python] no Python with numpy, torch and pytest; run: sudo apt-get install -y ${PYTHON_APT_PACKAGES.join(" ")} (or set EC_PYTHON)\n`,
  );
  process.exit(1);
}
const env = {
  ...process.env,
  EC_ENGINE: join(root, "bin", "ec.js"),
  EC_NODE: process.execPath,
  PYTHONDONTWRITEBYTECODE: "1",
  // Local edges on port 0 with fresh keys: the keys they are first seen with are this run's alone.
  EC_KNOWN_EDGES:
    process.env.EC_KNOWN_EDGES ?? join(mkdtempSync(join(tmpdir(), "ec-known-edges-")), "known-edges.json"),
};
const r = spawnSync(
  python,
  ["-m", "pytest", "-q", "-p", "no:cacheprovider", join(root, "python", "tests"), ...process.argv.slice(2)],
  {
    stdio: "inherit",
    cwd: root,
    env,
  },
);
process.exit(r.status ?? 1);
