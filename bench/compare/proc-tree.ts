/**
 * Resource use of a process tree from /proc (Linux): memory summed over the tree and CPU time
 * of live processes. Forked workers share pages, so PSS (each shared page split between its
 * users) is summed where the kernel offers it; RSS otherwise.
 */
import { readdirSync, readFileSync } from "node:fs";

const PAGE = 4096;
const TICKS = 100;

function read(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** Fields of a stat file after the command name (which may hold spaces and parentheses). */
function statFields(path: string): string[] | undefined {
  const text = read(path);
  if (!text) return undefined;
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** Direct children of a live process, from each of its threads' children list (cheap: no /proc scan). */
function childrenOf(pid: number): number[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tids.flatMap((tid) =>
    (read(`/proc/${pid}/task/${tid}/children`) ?? "").split(" ").filter(Boolean).map(Number),
  );
}

/** Every live descendant of `root`, itself included. */
export function treePids(root: number): number[] {
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...childrenOf(pid));
  }
  return out;
}

/** Proportional (else resident) bytes of one process; 0 once it is gone. */
export function memoryOf(pid: number): number {
  const rollup = read(`/proc/${pid}/smaps_rollup`);
  const pss = rollup && /^Pss:\s+(\d+) kB/m.exec(rollup);
  if (pss) return Number(pss[1]) * 1024;
  const statm = read(`/proc/${pid}/statm`);
  return statm ? Number(statm.split(" ")[1]) * PAGE : 0;
}

/** CPU seconds of a live process; with `children`, those of the children it has waited for too. */
export function cpuSecondsOf(pid: number, children = true): number {
  const f = statFields(`/proc/${pid}/stat`);
  if (!f) return 0;
  // utime, stime, cutime, cstime are fields 14–17 of stat; f starts at field 3.
  return (Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0)) / TICKS;
}

/** Minor page faults of a live process (fresh pages mapped in); with `children`, its waited-for children's too. */
export function minorFaultsOf(pid: number, children = true): number {
  const f = statFields(`/proc/${pid}/stat`);
  if (!f) return 0;
  // minflt and cminflt are fields 10 and 12 of stat.
  return Number(f[7]) + (children ? Number(f[9]) : 0);
}

/** CPU seconds of each live thread of a process, by thread id (the main thread's is the pid). */
export function threadCpuSeconds(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    // A thread that ended between the listing and the read has no stat.
    const f = statFields(`/proc/${pid}/task/${tid}/stat`);
    if (f) out.set(Number(tid), (Number(f[11]) + Number(f[12])) / TICKS);
  }
  return out;
}

/** This process's CPU seconds, children it waited for included; what a row reports about itself. */
export function selfCpuSeconds(): number {
  return cpuSecondsOf(process.pid);
}

/** Samples the summed memory of some process trees until stopped; keeps the peak. */
export class TreeMemorySampler {
  peakBytes = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly roots: () => number[],
    intervalMs = 200,
  ) {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  sample(): void {
    let total = 0;
    for (const root of this.roots()) for (const pid of treePids(root)) total += memoryOf(pid);
    this.peakBytes = Math.max(this.peakBytes, total);
  }

  stop(): number {
    clearInterval(this.timer);
    return this.peakBytes;
  }
}
