/**
 * ec from PyTorch: the Python client (python/) reading the same clips as the TypeScript ec rows
 * through ec.torch.ClipDataset in a DataLoader, on the same engine and origin-cache (run after
 * ec warm, so the cache is warm for both). The engine is the Python process's child: its CPU
 * and memory count in the row.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { RowDef } from "../row.js";
import { runThroughCache } from "./ec-remote.js";

export const ecPythonRow: RowDef = {
  name: "ec_python",
  label: "ec from PyTorch (DataLoader, cache warm)",
  async run(ctx) {
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
    });
  },
};
