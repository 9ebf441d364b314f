#!/usr/bin/env node
// Type-checks the Python client (python/src/ec) with pyright in strict mode (python/pyproject.toml),
// against the Python its tests run with, so numpy's and torch's own types are checked too.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { findPython, PYTHON_APT_PACKAGES } from "./python-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const python = findPython();
if (!python) {
  process.stderr.write(
    `[types:python] no Python with numpy, torch and pytest; run: sudo apt-get install -y ${PYTHON_APT_PACKAGES.join(" ")} (or set EC_PYTHON)\n`,
  );
  process.exit(1);
}
const r = spawnSync(
  process.execPath,
  [join(root, "node_modules", "pyright", "index.js"), "--project", join(root, "python"), "--pythonpath", python],
  { stdio: "inherit", cwd: root },
);
process.exit(r.status ?? 1);
