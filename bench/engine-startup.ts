/**
 * Start-up of `ec engine`, the child the Python client spawns: the bundled file
 * (dist/sdk/cli/engine.bundle.cjs) against the unbundled modules (EC_ENGINE_BUNDLE=0), rows
 * alternating (modules, bundle, modules, …) on a noisy machine. Per start: wall time from spawn
 * to the reply to its first request (ready: every module loaded), from spawn to `opened` for a
 * local folder of one video (what `ec.open()` waits for: the decoder and the addon loaded too),
 * and the child's CPU until then (utime + stime from /proc).
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/engine-startup.js [--runs 5] [--json]
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { cpuSecondsOf } from "./compare/proc-tree.js";
import { makeBenchVideos } from "./stream-common.js";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, json: { type: "boolean", default: false } },
});
const runs = Number(values.runs);
const root = join(import.meta.dirname, "..", "..");

interface Start {
  readyMs: number;
  openedMs: number;
  cpuMs: number;
}

async function start(bundled: boolean, videos: string): Promise<Start> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(root, "bin", "ec.js"), "engine"], {
    env: { ...process.env, EC_ENGINE_BUNDLE: bundled ? "1" : "0" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const events = lines[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => JSON.parse((await events.next()).value as string);
  child.stdin.write(`${JSON.stringify({ op: "merge", id: 1, checkpoints: [] })}\n`);
  await next();
  const readyMs = performance.now() - t0;
  const options = { frames: 4, size: [64, 64], batch: 2 };
  child.stdin.write(`${JSON.stringify({ op: "open", ds: 1, url: videos, options, dir: tmpdir() })}\n`);
  for (;;) if ((await next()).event === "opened") break;
  const openedMs = performance.now() - t0;
  const cpuMs = cpuSecondsOf(child.pid!, false) * 1000;
  child.stdin.end(`${JSON.stringify({ op: "close" })}\n`);
  await new Promise((resolve) => child.once("exit", resolve));
  return { readyMs, openedMs, cpuMs };
}

function range(xs: readonly number[]): { min: number; median: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
}

const dir = await mkdtemp(join(tmpdir(), "ec-engine-startup-"));
try {
  await makeBenchVideos(dir, { videos: 1, frames: 30, width: 160, height: 96, gop: 10 });
  await start(true, dir); // warms the page cache for both
  await start(false, dir);
  const rows: Record<"modules" | "bundle", Start[]> = { modules: [], bundle: [] };
  for (let i = 0; i < runs; i++) {
    rows.modules.push(await start(false, dir));
    rows.bundle.push(await start(true, dir));
  }
  const summary = Object.fromEntries(
    (["modules", "bundle"] as const).map((k) => [
      k,
      {
        ready_ms: range(rows[k].map((r) => r.readyMs)),
        opened_ms: range(rows[k].map((r) => r.openedMs)),
        cpu_ms: range(rows[k].map((r) => r.cpuMs)),
      },
    ]),
  );
  const ratio = (key: "ready_ms" | "opened_ms" | "cpu_ms") =>
    summary.bundle![key].median / summary.modules![key].median;
  const out = {
    runs,
    summary,
    bundle_vs_modules: { ready: ratio("ready_ms"), opened: ratio("opened_ms"), cpu: ratio("cpu_ms") },
    rows,
  };
  if (values.json) process.stdout.write(`${JSON.stringify(out)}\n`);
  else {
    for (const [k, v] of Object.entries(summary)) {
      const f = (r: { min: number; median: number; max: number }) =>
        `${r.median.toFixed(0)} (${r.min.toFixed(0)}–${r.max.toFixed(0)})`;
      process.stdout.write(
        `${k.padEnd(8)} ready ms ${f(v.ready_ms)}  opened ms ${f(v.opened_ms)}  cpu ms ${f(v.cpu_ms)}\n`,
      );
    }
    const b = out.bundle_vs_modules;
    process.stdout.write(
      `bundle / modules (medians): ready ${b.ready.toFixed(2)}, opened ${b.opened.toFixed(2)}, cpu ${b.cpu.toFixed(2)}\n`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
