import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../../origin-cache/store/group-commit.js";

/** A sync that records each call and how many ran at once. */
function recorder(fail?: (call: number) => boolean) {
  const calls: number[][] = [];
  let running = 0;
  let peak = 0;
  const sync = async (slabs: ReadonlySet<number>): Promise<void> => {
    calls.push([...slabs].sort((a, b) => a - b));
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, 20));
    running--;
    if (fail?.(calls.length)) throw Object.assign(new Error("EIO: sync failed"), { code: "EIO" });
  };
  return { calls, sync, peak: () => peak };
}

describe("GroupCommit", () => {
  it("commits a group at once when it holds its bytes, with one sync per slab touched", async () => {
    const r = recorder();
    const gc = new GroupCommit({ ms: 60_000, bytes: 4, sync: r.sync });
    // The timer is a minute: only the size of the group can commit it within the test's time.
    await Promise.all([0, 2, 0, 1].map((slab) => gc.add(slab, 1)));
    expect(r.calls).toEqual([[0, 1, 2]]);
    await gc.add(3, 5); // one write larger than the bound: committed alone, at once
    expect(r.calls).toEqual([[0, 1, 2], [3]]);
  });

  it("commits a partial group once it has waited its time", async () => {
    const r = recorder();
    const gc = new GroupCommit({ ms: 30, bytes: 100, sync: r.sync });
    let done = 0;
    const waits = [0, 0, 3].map((slab) => gc.add(slab, 1).then(() => done++));
    expect(done).toBe(0);
    await Promise.all(waits);
    expect(done).toBe(3);
    expect(r.calls).toEqual([[0, 3]]);
  });

  it("runs one sync at a time; writes during one join the next", async () => {
    const r = recorder();
    const gc = new GroupCommit({ ms: 1, bytes: 2, sync: r.sync });
    const first = Promise.all([gc.add(0, 1), gc.add(0, 1)]);
    const second = Promise.all([gc.add(1, 1), gc.add(1, 1)]);
    const third = gc.add(2, 1);
    await Promise.all([first, second, third]);
    expect(r.calls).toEqual([[0], [1], [2]]);
    expect(r.peak()).toBe(1);
  });

  it("fails every write of a group whose sync fails, and goes on with the next group", async () => {
    const r = recorder((call) => call === 1);
    const gc = new GroupCommit({ ms: 60_000, bytes: 2, sync: r.sync });
    const failed = [gc.add(0, 1), gc.add(0, 1)];
    const later = [gc.add(0, 1), gc.add(0, 1)];
    for (const p of failed) await expect(p).rejects.toMatchObject({ code: "EIO" });
    await expect(Promise.all(later)).resolves.toEqual([undefined, undefined]);
  });

  it("flush commits what waits now and settles after every group so far", async () => {
    const r = recorder();
    const gc = new GroupCommit({ ms: 60_000, bytes: 100, sync: r.sync });
    const w = gc.add(5, 1);
    await gc.flush();
    await expect(w).resolves.toBeUndefined();
    expect(r.calls).toEqual([[5]]);
    await gc.flush(); // nothing waiting: no sync
    expect(r.calls).toHaveLength(1);
  });
});
