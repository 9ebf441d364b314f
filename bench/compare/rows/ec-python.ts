/**
 * ec from PyTorch: the Python client (python/) reading the same clips as the TypeScript ec rows
 * through ec.torch.ClipDataset in a DataLoader, on the same engine and origin-cache (run after
 * ec cold, so the cache is warm). The engine is the Python process's child: its CPU and memory
 * count in the row. With `--pairs N` the row alternates N TypeScript and Python runs
 * (python-pairs.ts): `ec_python_vs_ts` is the median of those pairs' ratios.
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { runPythonPairs } from "../python-pairs.js";
import type { RowContext, RowDef, RowOutcome } from "../row.js";
import { runEc, runThroughCache } from "./ec-remote.js";

/** The same Python npm test uses (scripts/ is plain JavaScript, outside the compiled tree). */
export async function checkoutPython(ctx: RowContext): Promise<string | undefined> {
  const { findPython } = (await import(pathToFileURL(join(ctx.root, "scripts", "python-env.mjs")).href)) as {
    findPython(): string | undefined;
  };
  return findPython();
}

export const NO_PYTHON = "no Python with numpy, torch and pytest (npm test's setup installs them)";

/** One run of bench/ec_python_loader.py under `python`, `env` choosing its client and engine. */
function runPython(ctx: RowContext, python: string, env: Readonly<Record<string, string>>): Promise<RowOutcome> {
  return runThroughCache(ctx, python, join(ctx.root, "bench", "ec_python_loader.py"), {
    // EC_BENCH_NODE_ARGS (e.g. --cpu-prof) reach the engine the Python process starts, as every node child.
    EC_NODE_ARGS: process.env.EC_BENCH_NODE_ARGS ?? "",
    ...env,
  });
}

/**
 * A Python row's runs: one Python run with `--pairs 0`, else `--pairs` TypeScript and Python runs
 * alternating, the row's figures the median pair's Python run.
 */
export async function runPythonRow(
  ctx: RowContext,
  python: string,
  env: Readonly<Record<string, string>>,
): Promise<RowOutcome> {
  const py = () => runPython(ctx, python, env);
  if (ctx.config.pairs === 0) return py();
  const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
  const { outcome, pairs } = await runPythonPairs(
    ctx,
    ctx.config.pairs,
    () => runEc(ctx),
    py,
    () => loadavg()[0]!,
    log,
  );
  return outcome.kind === "ran" && pairs ? { ...outcome, pythonPairs: pairs } : outcome;
}

export const ecPythonRow: RowDef = {
  name: "ec_python",
  label: "ec from PyTorch (DataLoader, cache warm)",
  async run(ctx) {
    const python = await checkoutPython(ctx);
    if (!python) return { kind: "skipped", reason: NO_PYTHON };
    // The checkout's client (the loader puts python/src first) and engine, under the node running the bench.
    return runPythonRow(ctx, python, { EC_ENGINE: join(ctx.root, "bin", "ec.js"), EC_NODE: process.execPath });
  },
};
