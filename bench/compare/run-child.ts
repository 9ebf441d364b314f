/**
 * Runs one row in its own process and measures it from outside: peak memory of its process
 * tree (plus the shared cache process, for the ec rows), the cache's CPU during the row, and
 * the bytes the WAN carried.
 */
import { spawn } from "node:child_process";
import { cpuSecondsOf, TreeMemorySampler } from "./proc-tree.js";
import { parseReport, type ChildReport } from "./row-result.js";

export interface ChildRun {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Other live processes whose memory and CPU belong to this row (the origin-cache). */
  readonly alsoPids?: readonly number[];
  /** Bytes sent over the emulated WAN so far; read before and after. */
  readonly wanBytes?: () => number;
  readonly wanRequests?: () => number;
  readonly timeoutMs: number;
}

export interface Measured {
  readonly report: ChildReport;
  readonly peakMemoryBytes: number;
  /** The row's CPU seconds, including the also-pids' share during the run. */
  readonly cpuSeconds: number;
  readonly wanBytes: number | undefined;
  /** HTTP requests the WAN carried during the row (each one a Class B read at the bucket). */
  readonly wanRequests: number | undefined;
}

/**
 * Spawns the row, samples it every 100 ms, and returns its report with the outside figures.
 *
 * @example
 * const m = await runChild({ command: "node", args: ["dist/bench/compare/child/ec-stream.js", json], timeoutMs: 120_000 });
 */
export async function runChild(r: ChildRun): Promise<Measured> {
  const also = r.alsoPids ?? [];
  const cpuBefore = also.reduce((s, p) => s + cpuSecondsOf(p), 0);
  const wanBefore = r.wanBytes?.();
  const reqBefore = r.wanRequests?.();
  const child = spawn(r.command, r.args, { env: { ...process.env, ...r.env }, stdio: ["ignore", "pipe", "pipe"] });
  const sampler = new TreeMemorySampler(() => [child.pid!, ...also]);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const timer = setTimeout(() => child.kill("SIGKILL"), r.timeoutMs);
  const code = await new Promise<number | string>((resolve) => child.on("close", (c, sig) => resolve(c ?? sig ?? "?")));
  clearTimeout(timer);
  const peak = sampler.stop();
  if (code !== 0) throw new Error(`${r.command} ${r.args[0] ?? ""} exited with ${code}:\n${stderr.trim()}`);
  const report = parseReport(stdout);
  const cpuAlso = also.reduce((s, p) => s + cpuSecondsOf(p), 0) - cpuBefore;
  return {
    report,
    peakMemoryBytes: peak,
    cpuSeconds: report.cpuSeconds + cpuAlso,
    wanBytes: wanBefore === undefined ? undefined : r.wanBytes!() - wanBefore,
    wanRequests: reqBefore === undefined ? undefined : r.wanRequests!() - reqBefore,
  };
}
