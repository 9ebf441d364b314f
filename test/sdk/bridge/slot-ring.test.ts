import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SlotPool } from "../../../sdk/bridge/slot-pool.js";
import { ringSlots, SlotRing } from "../../../sdk/bridge/slot-ring.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function ring(count: number): Promise<{ ring: SlotRing; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), "ec-ring-"));
  dirs.push(dir);
  return { ring: new SlotRing(dir, count), dir };
}

describe("ringSlots: the engine alone sizes the ring its client maps", () => {
  it("holds the batches decoded ahead plus three, from 4 to 64 slots", () => {
    expect(ringSlots({ prefetch: 8, batch: 1 })).toBe(11);
    expect(ringSlots({ prefetch: 8, batch: 3 })).toBe(6);
    expect(ringSlots({ prefetch: 1, batch: 1 })).toBe(4);
    expect(ringSlots({ prefetch: 1000, batch: 1 })).toBe(64);
  });
});

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

  it("lends a free slot as mapped memory: what the decoder writes there is in the file the client maps", async () => {
    const { ring: r } = await ring(4);
    const memory = r.lend(6, 2)!;
    expect(memory.byteLength).toBe(2 << 20);
    new Uint8Array(memory, 0, 6).set([1, 2, 3, 4, 5, 6]);
    let released = 0;
    const frames = [new Uint8Array(memory, 0, 4), new Uint8Array(memory, 4, 2)];
    const slot = r.handOver(frames, 6, () => released++)!;
    expect([...(await readFile(r.files[slot]!.path)).subarray(0, 6)]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.bytesPlaced).toBe(6);
    expect(r.bytesCopied).toBe(0);
    // The client's release hands the memory back to the pipeline, not to the ring: the slot stays taken.
    r.release(slot);
    expect(released).toBe(1);
    expect(() => r.release(slot)).toThrow(expect.objectContaining({ code: "ERR_PROTOCOL" }));
    expect(r.lentCount).toBe(1);
    expect(r.give(memory)).toBe(true);
    expect(r.lentCount).toBe(0);
    // Free again: the next lend reuses the mapping.
    expect(r.lend(6, 2)).toBe(memory);
    r.close();
  });

  it("hands over only frames that lie back to back from a lent slot's start", async () => {
    const { ring: r } = await ring(4);
    const memory = r.lend(8, 2)!;
    const none = () => undefined;
    expect(r.handOver([new Uint8Array(memory, 2, 2)], 2, none)).toBeUndefined();
    expect(r.handOver([new Uint8Array(memory, 0, 2), new Uint8Array(memory, 4, 2)], 4, none)).toBeUndefined();
    expect(r.handOver([new Uint8Array(new ArrayBuffer(4))], 4, none)).toBeUndefined();
    expect(r.handOver([new Uint8Array(memory, 0, 2)], 4, none)).toBeUndefined();
    expect(r.lentCount).toBe(1);
    r.close();
  });

  it("keeps `reserve` slots unlent, lends none while a batch waits for a slot, and none after close", async () => {
    const { ring: r } = await ring(4);
    expect(r.lend(1, 2)).toBeDefined();
    expect(r.lend(1, 2)).toBeDefined();
    expect(r.lend(1, 2)).toBeUndefined(); // two of four lent: the rest are the client's and a copy's
    const held = await r.acquire(() => undefined);
    await r.acquire(() => undefined);
    let waited = false;
    const waiting = r.acquire(() => (waited = true));
    expect(waited).toBe(true);
    expect(r.lend(1, 0)).toBeUndefined();
    r.release(held);
    expect(await waiting).toBe(held);
    r.close();
    expect(r.lend(1, 0)).toBeUndefined();
  });

  it("speaks for a slot without touching it: counted as taken until lent or given up, and within `reserve`", async () => {
    const { ring: r } = await ring(4);
    expect(r.reserve(2)).toBe(true);
    expect(r.reserve(2)).toBe(true);
    expect(r.reserve(2)).toBe(false); // two of four spoken for: the rest are the client's and a copy's
    expect(r.lend(1, 2)).toBeUndefined(); // nor lent past them
    expect(r.files.every((f) => f.capacity === 0)).toBe(true); // no slot file grown (no page touched) yet
    const a = await r.acquire(() => undefined);
    const b = await r.acquire(() => undefined);
    // Two slots free, both spoken for: the engine pulls no further batch.
    expect(r.hasFree).toBe(false);
    const memory = r.lend(4096, 2, true);
    expect(memory?.byteLength).toBeGreaterThanOrEqual(4096);
    expect(r.lentCount).toBe(1);
    expect(r.hasFree).toBe(false);
    r.unreserve();
    expect(r.hasFree).toBe(true);
    for (const s of [a, b]) r.release(s);
    expect(r.give(memory!)).toBe(true);
    expect(r.reserve(2)).toBe(true);
    r.detach(); // the next stream starts with nothing spoken for
    expect(r.reserve(2)).toBe(true);
    expect(r.reserve(2)).toBe(true);
    r.close();
  });

  it("grows a lent slot's file and maps it anew when a batch needs more than it holds", async () => {
    const { ring: r } = await ring(3);
    const small = r.lend(1, 0)!;
    r.give(small);
    const big = r.lend(3 << 20, 0)!;
    expect(big).not.toBe(small);
    expect(big.byteLength).toBe(4 << 20);
    new Uint8Array(big)[(3 << 20) - 1] = 7;
    const slot = r.handOver([new Uint8Array(big, 0, 3 << 20)], 3 << 20, () => undefined)!;
    expect(r.capacityOf(slot)).toBe(4 << 20);
    expect((await readFile(r.files[slot]!.path))[(3 << 20) - 1]).toBe(7);
    r.close();
  });

  it("serves the next stream with its mappings kept, a slot the client still holds renewed, a stopped pool lending no more", async () => {
    const { ring: r, dir } = await ring(4);
    const oldPool = new SlotPool(r, 4);
    const kept = oldPool.take(6);
    new Uint8Array(kept, 0, 6).set([1, 2, 3, 4, 5, 6]);
    let released = 0;
    const keptSlot = r.handOver([new Uint8Array(kept, 0, 6)], 6, () => released++)!;
    const lent = oldPool.take(6); // being decoded into when the stream stops
    const inUse = r.lend(6, 0)!;
    r.give(inUse);
    r.unlink();
    r.detach();
    expect(r.fits(dir, 4)).toBe(false); // a slot is still lent to the stopped stream's decoder
    oldPool.give(lent);
    expect(r.fits(dir, 4)).toBe(true);
    expect(r.fits(dir, 5)).toBe(false);
    expect(oldPool.take(6)).not.toBe(inUse); // the stopped stream's pool decodes into heap memory now
    expect(r.lentCount).toBe(0);
    const before = r.files.map((f) => f.path);
    r.renewHeld();
    const after = r.files.map((f) => f.path);
    // The slot the client still maps a batch of gets a new, empty file; the kept batch is untouched.
    expect(after[keptSlot]).not.toBe(before[keptSlot]);
    expect(r.files[keptSlot]!.capacity).toBe(0);
    expect([...new Uint8Array(kept, 0, 6)]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(after.filter((p, i) => p === before[i])).toHaveLength(3);
    const next = new SlotPool(r, 4);
    // Every slot is free for the next stream, and one mapped before is lent again as it was.
    const again = [next.take(6), next.take(6)];
    expect(again).toContain(lent);
    expect(r.lentCount).toBe(2);
    r.unlink();
    expect(await readdir(dir)).toEqual([]);
    expect(released).toBe(0);
    r.close();
  });
});
