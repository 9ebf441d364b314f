/**
 * Runs one row in its own process and measures it from outside: peak memory of its process
 * tree (plus the shared cache process, for the ec rows), the cache's CPU during the row, and
 * the bytes the WAN carried.
 */
import { spawn } from "node:child_process";
import { onClient, type CpuSets } from "./cpu-sets.js";
import { cpuSecondsOf, minorFaultsOf, TreeMemorySampler, treePids } from "./proc-tree.js";
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
  /** Runs the row on the client side's CPUs (cpu-sets.ts). */
  readonly cpus?: CpuSets;
}

export interface Measured {
  readonly report: ChildReport;
  readonly peakMemoryBytes: number;
  /** The row's CPU seconds, including the also-pids' share during the run. */
  readonly cpuSeconds: number;
  /** The also-pids' (the origin-cache's) part of `cpuSeconds`, and their minor page faults; undefined without any. */
  readonly alsoCpuSeconds: number | undefined;
  readonly alsoMinorFaults: number | undefined;
  readonly wanBytes: number | undefined;
  /** HTTP requests the WAN carried during the row (each one a Class B read at the bucket). */
  readonly wanRequests: number | undefined;
  /**
   * CPU seconds the bench's own process tree (the WAN emulator, the edge in workerd) spent during
   * the row: the remote side, which in production runs elsewhere but here shares the cores.
   */
  readonly remoteCpuSeconds: number;
}

/**
 * Extra flags for every node child (rows and the origin-cache), e.g. EC_BENCH_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=prof" to profile them (node refuses --cpu-prof in NODE_OPTIONS).
 */
export function nodeArgs(args: readonly string[]): string[] {
  const extra = (process.env.EC_BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  return [...extra, ...args];
}

/** CPU of this process and its live children (wrangler, workerd), the also-pids' trees left out. */
function remoteCpu(also: readonly number[]): number {
  const skip = new Set(also.flatMap((p) => treePids(p)));
  // This process's reaped children are the rows themselves: its own time only.
  return treePids(process.pid)
    .filter((p) => !skip.has(p))
    .reduce((s, p) => s + cpuSecondsOf(p, p !== process.pid), 0);
}

/**
 * Spawns the row, samples it every 200 ms, and returns its report with the outside figures.
 *
 * @example
 * const m = await runChild({ command: "node", args: ["dist/bench/compare/child/ec-stream.js", json], timeoutMs: 120_000 });
 */
export async function runChild(r: ChildRun): Promise<Measured> {
  const also = r.alsoPids ?? [];
  const cpuBefore = also.reduce((s, p) => s + cpuSecondsOf(p), 0);
  const faultsBefore = also.reduce((s, p) => s + minorFaultsOf(p), 0);
  const remoteBefore = remoteCpu(also);
  const wanBefore = r.wanBytes?.();
  const reqBefore = r.wanRequests?.();
  const args = r.command === process.execPath ? nodeArgs(r.args) : [...r.args];
  const run = r.cpus ? onClient(r.cpus, r.command, args) : { command: r.command, args };
  const child = spawn(run.command, run.args, { env: { ...process.env, ...r.env }, stdio: ["ignore", "pipe", "pipe"] });
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
  const remoteCpuSeconds = remoteCpu(also) - remoteBefore;
  return {
    report,
    peakMemoryBytes: peak,
    cpuSeconds: report.cpuSeconds + cpuAlso,
    alsoCpuSeconds: also.length > 0 ? cpuAlso : undefined,
    alsoMinorFaults: also.length > 0 ? also.reduce((s, p) => s + minorFaultsOf(p), 0) - faultsBefore : undefined,
    remoteCpuSeconds,
    wanBytes: wanBefore === undefined ? undefined : r.wanBytes!() - wanBefore,
    wanRequests: reqBefore === undefined ? undefined : r.wanRequests!() - reqBefore,
  };
}
