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

async function runPython(ctx: RowContext): Promise<RowOutcome> {
  // The same Python npm test uses (scripts/ is plain JavaScript, outside the compiled tree).
  const { findPython } = (await import(pathToFileURL(join(ctx.root, "scripts", "python-env.mjs")).href)) as {
    findPython(): string | undefined;
  };
  const python = findPython();
  if (!python)
    return { kind: "skipped", reason: "no Python with numpy, torch and pytest (npm test's setup installs them)" };
  return runThroughCache(ctx, python, join(ctx.root, "bench", "ec_python_loader.py"), {
    EC_ENGINE: join(ctx.root, "bin", "ec.js"),
    EC_NODE: process.execPath,
    // EC_BENCH_NODE_ARGS (e.g. --cpu-prof) reach the engine the Python process starts, as every node child.
    EC_NODE_ARGS: process.env.EC_BENCH_NODE_ARGS ?? "",
  });
}

export const ecPythonRow: RowDef = {
  name: "ec_python",
  label: "ec from PyTorch (DataLoader, cache warm)",
  async run(ctx) {
    if (ctx.config.pairs === 0) return runPython(ctx);
    const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
    const { outcome, pairs } = await runPythonPairs(
      ctx,
      ctx.config.pairs,
      () => runEc(ctx),
      () => runPython(ctx),
      () => loadavg()[0]!,
      log,
    );
    return outcome.kind === "ran" && pairs ? { ...outcome, pythonPairs: pairs } : outcome;
  },
};
