#!/usr/bin/env node
// Runs the Python client's tests (python/tests) with pytest against this checkout's engine: with
// Debian's Python (python3-torch), then the tests that need torch >= 2 (torchdata's
// StatefulDataLoader) with the environment scripts/torch2-env.mjs makes once per machine.
// Arguments go to both pytest runs (e.g. -k NAME; a run they select nothing from passes).
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findPython, PYTHON_APT_PACKAGES } from "./python-env.mjs";
import { torch2Python } from "./torch2-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const TORCH2_TESTS = [join(root, "python", "tests", "test_stateful.py")];
const args = process.argv.slice(2);
const ci = process.env.CI === "true";

function log(msg) {
  process.stderr.write(`[test:python] ${msg}\n`);
}

const python = findPython();
if (!python) {
  log(
    `no Python with numpy, torch and pytest; run: sudo apt-get install -y ${PYTHON_APT_PACKAGES.join(" ")} (or set EC_PYTHON)`,
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

function pytest(py, targets) {
  const r = spawnSync(py, ["-m", "pytest", "-q", "-p", "no:cacheprovider", ...targets, ...args], {
    stdio: "inherit",
    cwd: root,
    env,
  });
  return r.status ?? 1;
}

// pytest's 5: no test selected, which only arguments (-k …) may cause.
const passed = (status) => status === 0 || (status === 5 && args.length > 0);
const ignored = TORCH2_TESTS.map((t) => `--ignore=${t}`);
const first = pytest(python, [join(root, "python", "tests"), ...ignored]);

let torch2;
try {
  torch2 = torch2Python();
} catch (err) {
  const why = err instanceof Error ? err.message : String(err);
  if (ci) {
    log(`FAILED: no environment with torch >= 2 for ${TORCH2_TESTS.join(", ")}: ${why}`);
    process.exit(1);
  }
  log(`SKIPPED ${TORCH2_TESTS.join(", ")}: no environment with torch >= 2 (${why}); CI fails here`);
  process.exit(passed(first) ? 0 : 1);
}
const second = pytest(torch2, TORCH2_TESTS);
const ran = first !== 5 || second !== 5;
process.exit(passed(first) && passed(second) && ran ? 0 : 1);
