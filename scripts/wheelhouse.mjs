#!/usr/bin/env node
// A wheelhouse of what the ec wheel depends on (python/wheelhouse.txt, pinned), for installing it
// offline (`pip install --no-index --find-links DIR ec-*.whl`): downloaded from PyPI once per
// machine and Python version into ${XDG_CACHE_HOME:-$HOME/.cache}/ec/wheelhouse-<hash>, keyed by
// the pin file. Prints that folder.
// Usage: node scripts/wheelhouse.mjs [--python PYTHON] [--python-version X.Y]
//   --python: the Python that downloads, and installs them unless --python-version names
//   another (e.g. a chroot's).
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: { python: { type: "string", default: "python3" }, "python-version": { type: "string" } },
});
const pins = join(root, "python", "wheelhouse.txt");
// numpy's wheels are per Python version: the key has the installing Python's tag.
const version =
  values["python-version"] ??
  execFileSync(values.python, ["-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"], {
    encoding: "utf8",
  }).trim();
const tag = `cp${version.replace(".", "")}`;
const key = createHash("sha256").update(readFileSync(pins)).digest("hex").slice(0, 16);
const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "ec");
const house = join(cache, `wheelhouse-${tag}-${key}`);
if (!existsSync(house)) {
  process.stderr.write(`[wheelhouse] pip download -r python/wheelhouse.txt (once per machine) into ${house}\n`);
  const partial = `${house}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  execFileSync(
    values.python,
    ["-m", "pip", "download", "--quiet", "--only-binary=:all:", "--python-version", version, "-d", partial, "-r", pins],
    {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1" },
    },
  );
  try {
    renameSync(partial, house);
  } catch (error) {
    // Another run got there first.
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(house)) throw error;
  }
}
process.stdout.write(`${house}\n`);
