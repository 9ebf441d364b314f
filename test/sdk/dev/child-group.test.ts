import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, firstLine, ROOT } from "../../helpers/ec-process.js";

/** Every live process as pid → (ppid, pgid); zombies count as gone. */
function processes(): Map<number, { ppid: number; pgid: number }> {
  const out = execFileSync("ps", ["-eo", "pid=,ppid=,pgid=,stat="], { encoding: "utf8" });
  const all = new Map<number, { ppid: number; pgid: number }>();
  for (const line of out.trim().split("\n")) {
    const [pid, ppid, pgid, stat] = line.trim().split(/\s+/);
    if (!stat!.startsWith("Z")) all.set(Number(pid), { ppid: Number(ppid), pgid: Number(pgid) });
  }
  return all;
}

/** The process groups `parent` started (its children that lead a group), and how many processes each holds. */
function groupsOf(parent: number): Map<number, number> {
  const all = processes();
  const groups = new Map<number, number>();
  for (const [pid, p] of all) if (p.ppid === parent && p.pgid === pid) groups.set(pid, 0);
  for (const p of all.values()) if (groups.has(p.pgid)) groups.set(p.pgid, groups.get(p.pgid)! + 1);
  return groups;
}

/** Processes left in `pgids` once they had `ms` to go. */
async function leftIn(pgids: readonly number[], ms = 10_000): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = [...processes().values()].filter((p) => pgids.includes(p.pgid)).length;
    if (left === 0 || Date.now() > deadline) return left;
    await sleep(100);
  }
}

const started: ChildProcess[] = [];
const groups: number[] = [];

async function startParent(what: "tree" | "edge", handles = false): Promise<{ parent: ChildProcess; pgids: number[] }> {
  const parent = spawn(
    process.execPath,
    [join(ROOT, "test", "sdk", "dev", "group-parent.mjs"), what, ...(handles ? ["handles-sigterm"] : [])],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  started.push(parent);
  expect(await firstLine(parent)).toBe("ready");
  const pgids = [...groupsOf(parent.pid!).keys()];
  groups.push(...pgids);
  return { parent, pgids };
}

describe("spawnGroup: no process of the group outlives its parent", () => {
  beforeAll(async () => {
    await ensureBuilt();
  });

  afterEach(() => {
    for (const p of started.splice(0)) p.kill("SIGKILL");
    for (const g of groups.splice(0)) {
      try {
        process.kill(-g, "SIGKILL");
      } catch {
        // Gone, as it should be.
      }
    }
  });

  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"] as const) {
    it(`a parent killed by ${signal} takes the group (guard, child, grandchild) with it`, async () => {
      const { parent, pgids } = await startParent("tree");
      expect(pgids).toHaveLength(1);
      // The child and grandchild (and the guard that leads them).
      expect(groupsOf(parent.pid!).get(pgids[0]!)).toBeGreaterThanOrEqual(2);
      const exited = new Promise((r) => parent.once("exit", (_code, sig) => r(sig)));
      parent.kill(signal);
      expect(await exited).toBe(signal);
      expect(await leftIn(pgids)).toBe(0);
    });
  }

  it("a parent that handles SIGTERM itself keeps its group until it exits", async () => {
    const { parent, pgids } = await startParent("tree", true);
    const before = groupsOf(parent.pid!).get(pgids[0]!);
    const handled = new Promise<void>((r) => parent.stdout!.on("data", (d: Buffer) => d.includes("handled") && r()));
    parent.kill("SIGTERM");
    await handled;
    expect(await leftIn(pgids, 500)).toBe(before);
    parent.kill("SIGKILL");
    expect(await leftIn(pgids)).toBe(0);
  });

  it("kill -9 of a parent of the real local edge leaves no wrangler or workerd behind", async () => {
    const { parent, pgids } = await startParent("edge");
    expect(pgids).toHaveLength(1);
    // Wrangler's launcher, wrangler, and at least one workerd (and the guard).
    expect(groupsOf(parent.pid!).get(pgids[0]!)).toBeGreaterThanOrEqual(3);
    parent.kill("SIGKILL");
    expect(await leftIn(pgids)).toBe(0);
  });
});
