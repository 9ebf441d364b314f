import { mkdir, open, readdir, readFile, stat, truncate, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BlockStore, type BlockStoreOptions } from "../../../origin-cache/store/block-store.js";
import { SlabFiles } from "../../../origin-cache/store/slab-files.js";
import { SLOT_HEADER, slotBytesFor } from "../../../origin-cache/store/slot.js";
import { dirBytes, flipByte, objectBytes, slabSlots, tempDir } from "../fixtures.js";

const BLOCK = 256 << 10;
const SLOT = slotBytesFor(BLOCK);
const id = (index: number, key = "/k") => ({ key, etag: '"e"', index });
const dirs: { remove: () => Promise<void> }[] = [];
const stores: BlockStore[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(stores.splice(0).map((s) => s.close()));
  await Promise.all(dirs.splice(0).map((d) => d.remove()));
});

async function openStore(dir: string, maxBytes: number, more: Partial<BlockStoreOptions> = {}): Promise<BlockStore> {
  const store = await BlockStore.open({ dir, maxBytes, blockSize: BLOCK, ...more });
  stores.push(store);
  return store;
}

async function fresh(maxBytes: number, more: Partial<BlockStoreOptions> = {}) {
  const d = await tempDir();
  dirs.push(d);
  return { dir: d.path, store: await openStore(d.path, maxBytes, more) };
}

async function slabFiles(dir: string): Promise<string[]> {
  return (await readdir(join(dir, "slabs"))).sort().map((f) => join(dir, "slabs", f));
}

describe("BlockStore", () => {
  it("reads back any sub-range of a stored block byte for byte", async () => {
    const { store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK - 1000, "a");
    expect(await store.put(id(3), data)).toBe(true);
    for (const [s, l] of [
      [0, 1],
      [65535, 2],
      [12345, 100_000],
      [0, data.length],
      [data.length - 1, 1],
    ] as const) {
      expect((await store.read(id(3), s, l))?.equals(data.subarray(s, s + l))).toBe(true);
    }
    expect(await store.read({ key: "/k", etag: '"other"', index: 3 }, 0, 1)).toBeUndefined();
  });

  it("keeps every block's data 4 KiB-aligned in its slab, slots of a fixed size", async () => {
    const { dir, store } = await fresh(10 << 20);
    const blocks = [0, 1, 2].map((i) => objectBytes(BLOCK - i * 5000, `align${i}`));
    for (const [i, data] of blocks.entries()) await store.put(id(i), data);
    const slots = await slabSlots(dir);
    expect(slots).toHaveLength(3);
    const fh = await open(slots[0]!.path, "r");
    for (const s of slots) {
      expect(s.offset % SLOT).toBe(0);
      expect((s.offset + SLOT_HEADER) % 4096).toBe(0);
      const data = blocks[s.header.index]!;
      const buf = Buffer.alloc(data.length);
      await fh.read(buf, 0, data.length, s.offset + SLOT_HEADER);
      expect(buf.equals(data)).toBe(true);
    }
    await fh.close();
  });

  it("never lets the directory exceed maxBytes and evicts least recently used first", async () => {
    const max = 5 * SLOT;
    const { dir, store } = await fresh(max);
    const data = objectBytes(BLOCK, "b");
    for (let i = 0; i < 4; i++) await store.put(id(i), data);
    await store.read(id(0), 0, 1); // block 0 becomes most recent
    for (let i = 4; i < 20; i++) {
      await Promise.all([0, 1].map((j) => store.put(id(i * 10 + j), data)));
      expect(await dirBytes(dir)).toBeLessThanOrEqual(max);
    }
    expect(store.residentBytes).toBeLessThanOrEqual(max);
    expect(store.evictions).toBeGreaterThan(0);
    expect(store.has(id(1))).toBe(false);
  });

  it("evicts blocks the plan needs soon only after all others", async () => {
    const { store } = await fresh(3 * SLOT, { protect: (_k, index) => index === 0 });
    const data = objectBytes(BLOCK, "c");
    for (let i = 0; i < 6; i++) await store.put(id(i), data);
    expect(store.has(id(0))).toBe(true);
  });

  it("declines a block larger than the whole bound instead of blocking", async () => {
    const { dir, store } = await fresh(64 << 10);
    expect(await store.put(id(0), objectBytes(BLOCK, "d"))).toBe(false);
    expect(await dirBytes(dir)).toBe(0);
  });

  it("shows a block once written and makes the writes of many pulls durable with one fdatasync", async () => {
    const { store } = await fresh(80 * SLOT, { slabBytes: 40 * SLOT });
    // Every FileHandle shares one prototype: count the syncs of all of them.
    const probeDir = await tempDir();
    dirs.push(probeDir);
    const probe = await open(join(probeDir.path, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void>; sync: () => Promise<void> };
    await probe.close();
    const datasync = vi.spyOn(proto, "datasync");
    const sync = vi.spyOn(proto, "sync");
    const data = objectBytes(BLOCK, "group");
    // Ten pulls of three blocks, one after another, as the cold path stores them.
    for (let p = 0; p < 10; p++) {
      const ids = [0, 1, 2].map((i) => id(p * 3 + i));
      expect(await Promise.all(store.putRun(ids, [data, data, data]))).toEqual([true, true, true]);
      // Readable at once, before any sync.
      expect(store.has(ids[2]!)).toBe(true);
      expect((await store.read(ids[0]!, 0, BLOCK))?.equals(data)).toBe(true);
    }
    expect(store.blocks).toBe(30);
    expect(datasync).not.toHaveBeenCalled();
    expect(store.syncs).toBe(0);
    await store.close();
    // One data sync for all thirty blocks; the one full sync is the directory's, for the new slab's name.
    expect(datasync).toHaveBeenCalledTimes(1);
    expect(store.syncs).toBe(1);
    expect(sync).toHaveBeenCalledTimes(1);
  });

  it("syncs a group at once when commitBytes have been written, and within commitMs otherwise", async () => {
    const { store } = await fresh(80 * SLOT, { commitMs: 60_000, commitBytes: 4 * SLOT });
    const data = objectBytes(BLOCK, "bytes");
    await Promise.all(
      store.putRun(
        [0, 1, 2].map((i) => id(i)),
        [data, data, data],
      ),
    );
    expect(store.syncs).toBe(0);
    await store.put(id(3), data); // the fourth slot's worth: the group is full
    await vi.waitFor(() => expect(store.syncs).toBe(1));
    const timed = await fresh(80 * SLOT, { commitMs: 20 });
    await timed.store.put(id(0), data);
    await vi.waitFor(() => expect(timed.store.syncs).toBe(1));
  });

  it("drops the blocks of a group whose sync fails, so they are pulled again", async () => {
    const errors: number[] = [];
    const { store } = await fresh(80 * SLOT, { commitMs: 10, onSyncError: (_err, blocks) => errors.push(blocks) });
    const probeDir = await tempDir();
    dirs.push(probeDir);
    const probe = await open(join(probeDir.path, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    vi.spyOn(proto, "datasync").mockRejectedValueOnce(Object.assign(new Error("EIO: sync failed"), { code: "EIO" }));
    const data = objectBytes(BLOCK, "eio");
    expect(await Promise.all(store.putRun([id(0), id(1)], [data, data]))).toEqual([true, true]);
    await vi.waitFor(() => expect(errors).toEqual([2]));
    expect(store.has(id(0))).toBe(false);
    expect(store.has(id(1))).toBe(false);
    // The next writes sync as usual and stay.
    expect(await store.put(id(2), data)).toBe(true);
    await vi.waitFor(() => expect(store.syncs).toBe(2));
    expect(store.has(id(2))).toBe(true);
  });

  it("writes the headers of each pull into pages earlier writes gave back, not a new zeroed buffer per pull", async () => {
    const { dir, store } = await fresh(80 * SLOT, { slabBytes: 40 * SLOT });
    const data = objectBytes(5000, "pages");
    const longKey = `/${"k".repeat(900)}`;
    await Promise.all(store.putRun([id(0, longKey), id(1, longKey), id(2, longKey)], [data, data, data]));
    const alloc = vi.spyOn(Buffer, "alloc");
    // Ten more pulls of three blocks, one after another, as the cold path stores them; the
    // pages come back from writes whose keys were longer than these.
    for (let p = 0; p < 10; p++) {
      const ids = [0, 1, 2].map((i) => id(p * 3 + i));
      expect(await Promise.all(store.putRun(ids, [data, data, data]))).toEqual([true, true, true]);
    }
    expect(alloc.mock.calls.filter(([size]) => size >= SLOT_HEADER)).toEqual([]);
    alloc.mockRestore();
    await store.close();
    // Every header reads back whole after a restart: no byte of an earlier, longer one is left.
    const again = await openStore(dir, 80 * SLOT, { slabBytes: 40 * SLOT });
    expect(again.blocks).toBe(33);
    for (let i = 0; i < 30; i++) expect((await again.read(id(i), 0, data.length))?.equals(data)).toBe(true);
    expect((await again.read(id(2, longKey), 0, data.length))?.equals(data)).toBe(true);
  });

  it("writes a run of blocks into adjacent slots with one write per slab, each slot checked on its own", async () => {
    const { dir, store } = await fresh(12 * SLOT, { slabBytes: 4 * SLOT });
    await store.put(id(0, "/first"), objectBytes(BLOCK, "first")); // slot 0
    const write = vi.spyOn(SlabFiles.prototype, "write");
    const blocks = [0, 1, 2, 3, 4].map((i) => objectBytes(i === 4 ? 5000 : BLOCK, `run${i}`));
    const ids = blocks.map((_, i) => id(i));
    const stored = store.putRun(ids, blocks);
    expect(await Promise.all(stored)).toEqual([true, true, true, true, true]);
    // Slots 1..3 fill slab 0 and slots 4..5 begin slab 1: one write each.
    expect(write).toHaveBeenCalledTimes(2);
    expect(store.slabWrites).toBe(3);
    expect(await store.putRun(ids.slice(3), blocks.slice(3))).toHaveLength(2);
    expect(store.slabWrites).toBe(3); // stored already: nothing written
    await store.close();
    const slots = await slabSlots(dir);
    const where = (i: number) => slots.find((s) => s.header.key === "/k" && s.header.index === i)!;
    expect([0, 1, 2, 3, 4].map((i) => [where(i).path.endsWith("-0.slab") ? 0 : 1, where(i).offset / SLOT])).toEqual([
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 0],
      [1, 1],
    ]);
    // A bit flipped in the middle of a run costs that block only.
    await flipByte(where(2).path, where(2).offset + SLOT_HEADER + 999);
    const again = await openStore(dir, 12 * SLOT, { slabBytes: 4 * SLOT });
    expect(again.blocks).toBe(6);
    for (const [i, data] of blocks.entries())
      expect((await again.read(id(i), 0, data.length))?.equals(data)).toBe(i === 2 ? undefined : true);
    expect(again.has(id(2))).toBe(false);
  });

  it("puts a run where slots are free or evicts least recently used first, one write per run of adjacent slots", async () => {
    const { store } = await fresh(6 * SLOT);
    const data = objectBytes(BLOCK, "evict-run");
    for (let i = 0; i < 6; i++) await store.put(id(i, "/old"), data); // slots 0..5, full
    await store.read(id(0, "/old"), 0, 1); // slot 0 most recent
    const write = vi.spyOn(SlabFiles.prototype, "write");
    const ids = [0, 1, 2].map((i) => id(i));
    expect(await Promise.all(store.putRun(ids, [data, data, data]))).toEqual([true, true, true]);
    // The three least recently used (slots 1..3) make way, side by side: one write.
    expect(write).toHaveBeenCalledTimes(1);
    expect([0, 1, 2, 3, 4, 5].map((i) => store.has(id(i, "/old")))).toEqual([true, false, false, false, true, true]);
    expect(store.residentBytes).toBeLessThanOrEqual(6 * SLOT);
  });

  it("spreads slots over several slab files, none larger than its share", async () => {
    const { dir, store } = await fresh(12 * SLOT, { slabBytes: 4 * SLOT });
    for (let i = 0; i < 12; i++) await store.put(id(i), objectBytes(BLOCK, `slab${i}`));
    const files = await slabFiles(dir);
    expect(files).toHaveLength(3);
    for (const f of files) expect((await stat(f)).size).toBeLessThanOrEqual(4 * SLOT);
    await store.close();
    const again = await openStore(dir, 12 * SLOT, { slabBytes: 4 * SLOT });
    expect(again.blocks).toBe(12);
    for (let i = 0; i < 12; i++)
      expect((await again.read(id(i), 0, BLOCK))?.equals(objectBytes(BLOCK, `slab${i}`))).toBe(true);
  });

  it("reads a span of blocks into one buffer, one preadv per run of consecutive slots in a slab", async () => {
    const { dir, store } = await fresh(12 * SLOT, { slabBytes: 4 * SLOT });
    const data = objectBytes(8 * BLOCK, "span");
    const block = (i: number) => data.subarray(i * BLOCK, (i + 1) * BLOCK);
    for (let i = 0; i < 6; i++) await store.put(id(i), block(i)); // slots 0..5: slab 0 holds 0..3, slab 1 holds 4..5
    await store.put(id(0, "/other"), block(6)); // slot 6
    await store.put(id(7), block(7)); // slot 7: next to slot 6, not to block 5's
    const readv = vi.spyOn(SlabFiles.prototype, "readv");
    const from = 1000;
    const to = 7 * BLOCK + 5000; // blocks 0..5 and 7 of the span (block 6 is not stored under /k)
    const pieces = [0, 1, 2, 3, 4, 5, 6, 7].map((b) => {
      const start = Math.max(from, b * BLOCK) - b * BLOCK;
      const end = Math.min(to, (b + 1) * BLOCK) - b * BLOCK;
      return { id: id(b), start, length: end - start, at: b * BLOCK + start - from };
    });
    const into = Buffer.alloc(to - from, 0xee);
    expect(await store.readInto(pieces, into)).toEqual([6]);
    expect(readv).toHaveBeenCalledTimes(3);
    expect(into.subarray(0, 6 * BLOCK - from).equals(data.subarray(from, 6 * BLOCK))).toBe(true);
    expect(into.subarray(6 * BLOCK - from, 7 * BLOCK - from).every((b) => b === 0xee)).toBe(true);
    expect(into.subarray(7 * BLOCK - from).equals(data.subarray(7 * BLOCK, to))).toBe(true);

    // After a restart each block is checked whole on its first read, and a bad one is not served.
    await store.close();
    const slot = (await slabSlots(dir)).find((s) => s.header.index === 2 && s.header.key === "/k")!;
    await flipByte(slot.path, slot.offset + SLOT_HEADER + 10);
    const again = await openStore(dir, 12 * SLOT, { slabBytes: 4 * SLOT });
    const second = Buffer.alloc(to - from);
    expect(await again.readInto(pieces, second)).toEqual([2, 6]);
    expect(again.has(id(2))).toBe(false);
    expect(second.subarray(0, 2 * BLOCK - from).equals(data.subarray(from, 2 * BLOCK))).toBe(true);
    expect(second.subarray(3 * BLOCK - from, 6 * BLOCK - from).equals(data.subarray(3 * BLOCK, 6 * BLOCK))).toBe(true);
  });

  it("drops a block whose bytes changed on disk, caught on its first read after a restart", async () => {
    const { dir, store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK, "e");
    await store.put(id(0), data);
    await store.put(id(1), data);
    await store.close();
    const slot = (await slabSlots(dir)).find((s) => s.header.index === 0)!;
    await flipByte(slot.path, slot.offset + SLOT_HEADER + 70_000);
    const corrupt: string[] = [];
    const again = await openStore(dir, 10 << 20, { onCorrupt: (where) => corrupt.push(where) });
    expect(again.blocks).toBe(2);
    // Any read of it fails, even one of bytes that were not touched: the whole block is checked.
    expect(await again.read(id(0), 0, 100)).toBeUndefined();
    expect(again.has(id(0))).toBe(false);
    expect(corrupt).toEqual([`${slot.path}@${slot.offset}`]);
    expect((await again.read(id(1), 0, BLOCK))?.equals(data)).toBe(true);
    await again.close();
    // Its header is gone too: the next restart does not find it again.
    const third = await openStore(dir, 10 << 20);
    expect(third.blocks).toBe(1);
    expect(third.has(id(1))).toBe(true);
  });

  it("rebuilds its index on reopen, discarding torn slots and other slabs, keeping files it did not make", async () => {
    const { dir, store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK, "f");
    for (let i = 0; i < 3; i++) await store.put(id(i), data);
    await store.close();
    const [slab] = await slabFiles(dir);
    const slots = await slabSlots(dir);
    // The last slot cut short, as a crash while the slab grew could leave it, and the first
    // one's header torn.
    await truncate(slab!, slots[2]!.offset + SLOT_HEADER + 8192);
    await flipByte(slab!, slots[0]!.offset + 20);
    await writeFile(join(dir, "slabs", "junk.slab"), "not a slab");
    await writeFile(join(dir, "slabs", `${SLOT * 2}-0.slab`), Buffer.alloc(SLOT));
    await mkdir(join(dir, "blocks", "ab"), { recursive: true });
    await writeFile(join(dir, "blocks", "ab", "x.blk"), "an old block");
    await mkdir(join(dir, "tmp"), { recursive: true });
    const corrupt: string[] = [];
    const again = await openStore(dir, 10 << 20, { onCorrupt: (where) => corrupt.push(where) });
    expect(again.blocks).toBe(1);
    expect(corrupt).toHaveLength(2);
    const survivor = slots[1]!.header.index;
    expect((await again.read(id(survivor), 0, BLOCK))?.equals(data)).toBe(true);
    // The slab of another geometry was the cache's and is gone; what it did not make stays.
    expect((await readdir(dir)).sort()).toEqual([".ec-cache", "blocks", "slabs", "tmp"]);
    expect((await readdir(join(dir, "slabs"))).sort()).toEqual([basename(slab!), "junk.slab"].sort());
    expect(await readFile(join(dir, "blocks", "ab", "x.blk"), "utf8")).toBe("an old block");
    await again.close();
    // Their headers were blanked: the next restart neither counts them again nor loses the survivor.
    const third = await openStore(dir, 10 << 20, { onCorrupt: (where) => corrupt.push(where) });
    expect(corrupt).toHaveLength(2);
    expect(third.blocks).toBe(1);
    // The torn slots are free again and take new blocks.
    for (let i = 10; i < 12; i++) expect(await third.put(id(i), data)).toBe(true);
    expect((await readFile(slab!)).length).toBeLessThanOrEqual(3 * SLOT);
  });

  it("trims to a smaller bound on reopen", async () => {
    const { dir, store } = await fresh(10 << 20);
    for (let i = 0; i < 6; i++) await store.put(id(i), objectBytes(BLOCK, `g${i}`));
    await store.close();
    const max = 2 * SLOT;
    const again = await openStore(dir, max);
    expect(again.blocks).toBe(2);
    expect(await dirBytes(dir)).toBeLessThanOrEqual(max);
    for (let i = 0; i < 6; i++)
      if (again.has(id(i))) expect((await again.read(id(i), 0, BLOCK))?.equals(objectBytes(BLOCK, `g${i}`))).toBe(true);
  });
});
