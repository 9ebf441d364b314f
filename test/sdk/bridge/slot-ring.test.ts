import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SlotRing } from "../../../sdk/bridge/slot-ring.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function ring(count: number): Promise<{ ring: SlotRing; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), "ec-ring-"));
  dirs.push(dir);
  return { ring: new SlotRing(dir, count), dir };
}

describe("SlotRing", () => {
  it("writes frames back to back from the slot's start and grows the file only when a batch needs more", async () => {
    const { ring: r } = await ring(2);
    const slot = await r.acquire(() => undefined);
    const cap = r.write(slot, [Uint8Array.of(1, 2, 3), Uint8Array.of(4, 5)], 5);
    expect(cap).toBe(2 << 20);
    expect([...(await readFile(r.files[slot]!.path)).subarray(0, 5)]).toEqual([1, 2, 3, 4, 5]);
    expect(r.write(slot, [new Uint8Array(3 << 20)], 3 << 20)).toBe(4 << 20);
    r.close();
  });

  it("hands a released slot straight to the oldest waiter, so no later caller can take it first", async () => {
    const { ring: r } = await ring(1);
    const first = await r.acquire(() => undefined);
    let waited = 0;
    const order: string[] = [];
    const a = r.acquire(() => waited++).then((s) => (order.push("a"), s));
    const b = r.acquire(() => waited++).then((s) => (order.push("b"), s));
    r.release(first);
    // A caller arriving right after the release must not get the slot that a waiter was promised.
    let late = false;
    void r.acquire(() => undefined).then(() => (late = true));
    expect(await a).toBe(0);
    expect(waited).toBe(2);
    r.release(0);
    expect(await b).toBe(0);
    expect(order).toEqual(["a", "b"]);
    expect(late).toBe(false);
    r.close();
  });

  it("refuses to release a slot it did not hand out, and leaves no file behind once unlinked", async () => {
    const { ring: r, dir } = await ring(2);
    expect(() => r.release(1)).toThrow(expect.objectContaining({ code: "ERR_PROTOCOL" }));
    r.unlink();
    expect(await readdir(dir)).toEqual([]);
    const slot = await r.acquire(() => undefined);
    expect(r.write(slot, [Uint8Array.of(9)], 1)).toBeGreaterThan(0); // writes go on through the open descriptors
    r.close();
  });
});
