/**
 * The loader a researcher writes today (bench/torch_loader.py): a PyTorch DataLoader, one
 * worker per core, PyAV opening each signed URL. Debian's python3-torch and python3-av are
 * installed with apt-get when missing and this is root; otherwise the row is skipped.
 */
import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ROW_TIMEOUT_MS, urlFor, type RowDef } from "../row.js";
import { runChild } from "../run-child.js";

/** pyenv's python3 comes first on PATH here; the Debian packages belong to this one. */
const PYTHON = "/usr/bin/python3";
const PACKAGES = ["python3-torch", "python3-av"];

function importable(): boolean {
  return spawnSync(PYTHON, ["-c", "import torch, av"], { stdio: "ignore" }).status === 0;
}

/** undefined when torch and av import; else why they cannot. */
function ensurePackages(): string | undefined {
  if (importable()) return undefined;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  const apt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (!root || !apt)
    return `${PYTHON} cannot import torch and av; install them with: sudo apt-get install -y ${PACKAGES.join(" ")}`;
  process.stderr.write(`[bench] installing ${PACKAGES.join(" ")} with apt-get (once)\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const r = spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...PACKAGES], {
    stdio: "inherit",
    env,
  });
  if (r.status !== 0 || !importable())
    return `apt-get install ${PACKAGES.join(" ")} failed (exit ${r.status}); the torch row needs them`;
  return undefined;
}

export const torchRow: RowDef = {
  name: "torch",
  label: "PyTorch DataLoader + PyAV",
  slow: true,
  async run(ctx) {
    const bed = ctx.testbed;
    if (!bed) return { kind: "skipped", reason: "the local edge did not start (see the message above)" };
    if (spawnSync(PYTHON, ["--version"], { stdio: "ignore" }).status !== 0)
      return { kind: "skipped", reason: `${PYTHON} not found` };
    const missing = ensurePackages();
    if (missing) return { kind: "skipped", reason: missing };
    const file = join(ctx.workDir, "torch-clips.json");
    await writeFile(file, JSON.stringify(ctx.clips.map((clip) => ({ url: urlFor(bed, clip.key), clip }))));
    const m = await runChild({
      command: PYTHON,
      args: [
        join(ctx.root, "bench", "torch_loader.py"),
        file,
        "--workers",
        String(ctx.config.workers),
        "--batch",
        String(ctx.config.batch),
        "--step-ms",
        String(ctx.config.stepMs),
      ],
      wanBytes: () => bed.wan.stats.bytesSent,
      wanRequests: () => bed.wan.stats.requests,
      timeoutMs: ROW_TIMEOUT_MS,
      cpus: ctx.config.cpus,
    });
    return { kind: "ran", ...m };
  },
};
