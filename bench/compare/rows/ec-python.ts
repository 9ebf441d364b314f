/**
 * ec from PyTorch: the Python client (python/) reading the same clips as the TypeScript ec rows
 * through ec.torch.ClipDataset in a DataLoader, on the same engine and origin-cache (run after
 * ec warm, so the cache is warm for both). The engine is the Python process's child: its CPU
 * and memory count in the row.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ecOptions, ROW_TIMEOUT_MS, type RowDef } from "../row.js";
import { runChild } from "../run-child.js";

export const ecPythonRow: RowDef = {
  name: "ec_python",
  label: "ec from PyTorch (DataLoader, cache warm)",
  async run(ctx) {
    const bed = ctx.testbed;
    if (!bed) return { kind: "skipped", reason: "the local edge did not start (see the message above)" };
    if (!ctx.cache) return { kind: "skipped", reason: "the origin-cache process did not start (see the message above)" };
    // The same Python npm test uses (scripts/ is plain JavaScript, outside the compiled tree).
    const { findPython } = (await import(pathToFileURL(join(ctx.root, "scripts", "python-env.mjs")).href)) as { findPython(): string | undefined };
    const python = findPython();
    if (!python) return { kind: "skipped", reason: "no Python with numpy, torch and pytest (npm test's setup installs them)" };
    const args = { url: bed.datasetUrl, options: { ...ecOptions(ctx.config), cache: ctx.cache.url, token: bed.edge.token }, stepMs: ctx.config.stepMs };
    const m = await runChild({
      command: python,
      args: [join(ctx.root, "bench", "ec_python_loader.py"), JSON.stringify(args)],
      env: { NODE_EXTRA_CA_CERTS: bed.caFile, EC_ENGINE: join(ctx.root, "bin", "ec.js"), EC_NODE: process.execPath },
      alsoPids: [ctx.cache.pid],
      wanBytes: () => bed.wan.stats.bytesSent,
      wanRequests: () => bed.wan.stats.requests,
      timeoutMs: ROW_TIMEOUT_MS,
      cpus: ctx.config.cpus,
    });
    return { kind: "ran", ...m };
  },
};
