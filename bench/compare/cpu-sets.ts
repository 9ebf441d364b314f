/**
 * Two CPU sets for one run: the remote side (the edge in workerd, wrangler, the WAN emulator,
 * which in production are not on the GPU host) and the client side (every row's loader, its
 * decoder threads, the origin-cache). Rows then compare the same client cores, whatever the
 * remote side costs. Linux `taskset` does the pinning; without it, nothing is pinned and the
 * run says so.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { delimiter, join } from "node:path";

export interface CpuSets {
  readonly client: readonly number[];
  readonly remote: readonly number[];
  /** Why nothing is pinned, when it is not. */
  readonly unpinned?: string;
}

/** "0-2,5" → [0, 1, 2, 5]. */
export function parseCpuList(raw: string): number[] {
  const out: number[] = [];
  for (const part of raw.split(",").filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`Expected a CPU list such as 0-2,5 but received ${JSON.stringify(raw)}`);
    for (let c = Number(m[1]); c <= Number(m[2] ?? m[1]); c++) out.push(c);
  }
  return [...new Set(out)].sort((a, b) => a - b);
}

/**
 * The default split: a quarter of the cores (at least one) for the remote side, the rest for the
 * client; on 2 cores, one each.
 *
 * @example
 * defaultCpuSets(2); // { client: [0], remote: [1] }
 */
export function defaultCpuSets(cores: number = availableParallelism()): CpuSets {
  if (cores < 2) return { client: [0], remote: [0], unpinned: "one core: the remote side shares it" };
  const remote = Math.max(1, Math.floor(cores / 4));
  const all = [...Array(cores).keys()];
  return { client: all.slice(0, cores - remote), remote: all.slice(cores - remote) };
}

/** taskset by its path: a row's child may run with a PATH that lacks it (the wheel row's has no node on it). */
const TASKSET =
  (process.env.PATH ?? "")
    .split(delimiter)
    .map((d) => join(d, "taskset"))
    .find((p) => existsSync(p)) ?? "taskset";

function hasTaskset(): boolean {
  return spawnSync(TASKSET, ["--version"], { stdio: "ignore" }).status === 0;
}

/** Pins this process and every thread it has to the remote set: what it starts later inherits it. */
export function pinSelfToRemote(sets: CpuSets): CpuSets {
  if (sets.unpinned) return sets;
  if (!hasTaskset()) return { ...sets, unpinned: "taskset not found (util-linux)" };
  const r = spawnSync(TASKSET, ["-a", "-p", "-c", sets.remote.join(","), String(process.pid)], { encoding: "utf8" });
  if (r.status !== 0) return { ...sets, unpinned: `taskset failed: ${r.stderr.trim()}` };
  return sets;
}

/** The command line that runs `command args` on the client set. */
export function onClient(sets: CpuSets, command: string, args: readonly string[]): { command: string; args: string[] } {
  if (sets.unpinned) return { command, args: [...args] };
  return { command: TASKSET, args: ["-c", sets.client.join(","), command, ...args] };
}
