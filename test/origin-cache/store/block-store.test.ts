import { mkdir, open, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlockStore } from "../../../origin-cache/store/block-store.js";
import { dirBytes, objectBytes, tempDir } from "../fixtures.js";

const CHUNK = 64 << 10;
const BLOCK = 256 << 10;
const dirs: { remove: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => d.remove()));
});

async function fresh(maxBytes: number, protect?: (key: string, index: number) => boolean) {
  const d = await tempDir();
  dirs.push(d);
  return { dir: d.path, store: await BlockStore.open({ dir: d.path, maxBytes, chunkSize: CHUNK, ...(protect ? { protect } : {}) }) };
}

async function blockFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of await readdir(join(dir, "blocks"))) for (const f of await readdir(join(dir, "blocks", sub))) out.push(join(dir, "blocks", sub, f));
  return out;
}

describe("BlockStore", () => {
  it("reads back any sub-range of a stored block byte for byte", async () => {
    const { store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK - 1000, "a");
    expect(await store.put({ key: "/k", etag: '"e"', index: 3 }, data)).toBe(true);
    for (const [s, l] of [[0, 1], [CHUNK - 1, 2], [12345, 100_000], [0, data.length], [data.length - 1, 1]] as const) {
      expect((await store.read({ key: "/k", etag: '"e"', index: 3 }, s, l))?.equals(data.subarray(s, s + l))).toBe(true);
    }
    expect(await store.read({ key: "/k", etag: '"other"', index: 3 }, 0, 1)).toBeUndefined();
  });

  it("keeps data 4 KiB-aligned inside the file", async () => {
    const { dir, store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK, "align");
    await store.put({ key: "/k", etag: '"e"', index: 0 }, data);
    const [file] = await blockFiles(dir);
    const fh = await open(file as string, "r");
    const buf = Buffer.alloc(4096);
    await fh.read(buf, 0, 4096, 4096);
    await fh.close();
    expect(buf.equals(data.subarray(0, 4096))).toBe(true);
  });

  it("never lets the directory exceed maxBytes and evicts least recently used first", async () => {
    const max = 5 * (BLOCK + 4096);
    const { dir, store } = await fresh(max);
    const data = objectBytes(BLOCK, "b");
    for (let i = 0; i < 4; i++) await store.put({ key: "/k", etag: '"e"', index: i }, data);
    await store.read({ key: "/k", etag: '"e"', index: 0 }, 0, 1); // block 0 becomes most recent
    for (let i = 4; i < 20; i++) {
      await Promise.all([0, 1].map((j) => store.put({ key: "/k", etag: '"e"', index: i * 10 + j }, data)));
      expect(await dirBytes(dir)).toBeLessThanOrEqual(max);
    }
    expect(store.residentBytes).toBeLessThanOrEqual(max);
    expect(store.evictions).toBeGreaterThan(0);
    expect(store.has({ key: "/k", etag: '"e"', index: 1 })).toBe(false);
  });

  it("evicts blocks the plan needs soon only after all others", async () => {
    const max = 3 * (BLOCK + 4096);
    const { store } = await fresh(max, (_k, index) => index === 0);
    const data = objectBytes(BLOCK, "c");
    for (let i = 0; i < 6; i++) await store.put({ key: "/k", etag: '"e"', index: i }, data);
    expect(store.has({ key: "/k", etag: '"e"', index: 0 })).toBe(true);
  });

  it("declines a block larger than the whole bound instead of blocking", async () => {
    const { dir, store } = await fresh(64 << 10);
    expect(await store.put({ key: "/k", etag: '"e"', index: 0 }, objectBytes(BLOCK, "d"))).toBe(false);
    expect(await dirBytes(dir)).toBe(0);
  });

  it("drops a block whose bytes changed on disk and reads it as a miss", async () => {
    const { dir, store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK, "e");
    await store.put({ key: "/k", etag: '"e"', index: 0 }, data);
    const [file] = await blockFiles(dir);
    const fh = await open(file as string, "r+");
    await fh.write(Buffer.from([data[CHUNK + 7]! ^ 0xff]), 0, 1, 4096 + CHUNK + 7);
    await fh.close();
    expect((await store.read({ key: "/k", etag: '"e"', index: 0 }, 0, 100))?.equals(data.subarray(0, 100))).toBe(true);
    expect(await store.read({ key: "/k", etag: '"e"', index: 0 }, CHUNK, 100)).toBeUndefined();
    expect(store.has({ key: "/k", etag: '"e"', index: 0 })).toBe(false);
    expect(await blockFiles(dir)).toHaveLength(0);
  });

  it("rebuilds its index on reopen, discarding temp leftovers and torn or foreign files", async () => {
    const { dir, store } = await fresh(10 << 20);
    const data = objectBytes(BLOCK, "f");
    await store.put({ key: "/k", etag: '"e"', index: 0 }, data);
    await store.put({ key: "/k", etag: '"e"', index: 1 }, data);
    const [first] = await blockFiles(dir);
    // A block cut short, as a rename of an unsynced file could leave it, and a stray temp file.
    await writeFile(first as string, (await readFile(first as string)).subarray(0, 8192));
    await writeFile(join(dir, "tmp", "x.tmp"), Buffer.alloc(1000));
    await mkdir(join(dir, "blocks", "zz"), { recursive: true });
    await writeFile(join(dir, "blocks", "zz", "junk.blk"), "not a block");
    const again = await BlockStore.open({ dir, maxBytes: 10 << 20, chunkSize: CHUNK });
    expect(again.blocks).toBe(1);
    const survivor = again.has({ key: "/k", etag: '"e"', index: 0 }) ? 0 : 1;
    expect((await again.read({ key: "/k", etag: '"e"', index: survivor }, 0, BLOCK))?.equals(data)).toBe(true);
    expect(await readdir(join(dir, "tmp"))).toEqual([]);
    expect((await blockFiles(dir)).length).toBe(1);
  });

  it("trims to a smaller bound on reopen", async () => {
    const { dir, store } = await fresh(10 << 20);
    for (let i = 0; i < 6; i++) await store.put({ key: "/k", etag: '"e"', index: i }, objectBytes(BLOCK, `g${i}`));
    const max = 2 * (BLOCK + 4096);
    const again = await BlockStore.open({ dir, maxBytes: max, chunkSize: CHUNK });
    expect(again.blocks).toBe(2);
    expect(await dirBytes(dir)).toBeLessThanOrEqual(max);
  });
});
