// Finds the Python that `npm test` runs the Python client's tests with: one with numpy, torch,
// pytest and venv. EC_PYTHON first, then the distribution's, then the one on PATH.
import { spawnSync } from "node:child_process";

export const PYTHON_APT_PACKAGES = [
  "python3-numpy",
  "python3-torch",
  "python3-pytest",
  "python3-venv",
  "python3-pip",
  "python3-setuptools",
];
const PROBE = "import numpy, torch, pytest, venv, ensurepip, setuptools";

function works(python) {
  return spawnSync(python, ["-c", PROBE], { stdio: "ignore" }).status === 0;
}

/** The first candidate that can run the tests, or undefined. */
export function findPython() {
  const candidates = [process.env.EC_PYTHON, "/usr/bin/python3", "python3"].filter(Boolean);
  return candidates.find(works);
}

/** The first candidate that can make a virtual environment (venv and ensurepip), or undefined. */
export function findVenvPython() {
  const candidates = [process.env.EC_PYTHON, "/usr/bin/python3", "python3"].filter(Boolean);
  return candidates.find((p) => spawnSync(p, ["-c", "import venv, ensurepip"], { stdio: "ignore" }).status === 0);
}
