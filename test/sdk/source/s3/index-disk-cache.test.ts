import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { encodeIndex } from "../../../../common/media-index/index.js";
import type { IndexV1 } from "../../../../common/schema/index.js";
import { defaultIndexCacheDir, IndexDiskCache } from "../../../../sdk/source/s3/index.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-index-cache-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const array = (key: string, etag: string): IndexV1 => ({
  version: 1,
  key,
  etag,
  size: 1000,
  kind: "array",
  array: { dtype: "<f4", shape: [10, 25], fortranOrder: false, dataOffset: 128 },
});

describe("IndexDiskCache", () => {
  it("returns what was put for the same (scope, key, etag) and misses for a new etag", async () => {
    const cache = new IndexDiskCache(dir);
    const id = IndexDiskCache.id("scope", "a.npy", '"e1"');
    expect(await cache.get(id, { key: "a.npy", etag: '"e1"' })).toBeUndefined();
    await cache.put(id, array("a.npy", '"e1"'));
    const again = new IndexDiskCache(dir);
    expect(await again.get(id, { key: "a.npy", etag: '"e1"' })).toEqual(array("a.npy", '"e1"'));
    expect(IndexDiskCache.id("scope", "a.npy", '"e2"')).not.toBe(id);
    expect(IndexDiskCache.id("other-bucket", "a.npy", '"e1"')).not.toBe(id);
    expect([again.hits, again.misses]).toEqual([1, 0]);
  });

  it("stays within its byte bound, evicting the least recently used first", async () => {
    const entry = encodeIndex(array("k0", "e")).length;
    const cache = new IndexDiskCache(dir, entry * 3);
    const ids = ["k0", "k1", "k2", "k3"].map((k) => IndexDiskCache.id("s", k, "e"));
    for (const [i, id] of ids.slice(0, 3).entries()) {
      await cache.put(id, array(`k${i}`, "e"));
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(await cache.get(ids[0]!, { key: "k0", etag: "e" })).toBeDefined(); // k0 is now the most recent
    await cache.put(ids[3]!, array("k3", "e"));
    expect(await cache.bytes()).toBeLessThanOrEqual(entry * 3);
    expect(await cache.get(ids[1]!, { key: "k1", etag: "e" })).toBeUndefined();
    expect(await cache.get(ids[0]!, { key: "k0", etag: "e" })).toBeDefined();
    expect((await readdir(dir)).filter((n) => n.endsWith(".idx"))).toHaveLength(3);
  });

  it("drops a corrupt entry and a stale temp file left by a killed writer, not a fresh one", async () => {
    const id = IndexDiskCache.id("s", "bad", "e");
    await writeFile(join(dir, `${id}.idx`), "not an index");
    await writeFile(join(dir, `${id}.1234.tmp`), "half");
    const longAgo = new Date(Date.now() - 3600_000);
    await utimes(join(dir, `${id}.1234.tmp`), longAgo, longAgo);
    await writeFile(join(dir, `${id}.5678.tmp`), "another writer, mid-write");
    const cache = new IndexDiskCache(dir);
    expect(await cache.get(id, { key: "bad", etag: "e" })).toBeUndefined();
    expect(await readdir(dir)).toEqual([`${id}.5678.tmp`]);
  });

  it("bounds local tables apart from indexes: indexes never evict a table", async () => {
    const entry = encodeIndex(array("k0", "e")).length;
    const cache = new IndexDiskCache(dir, entry * 3, 10);
    expect(await cache.putFile("t.tbl", new Uint8Array(4).fill(7))).toBe(true);
    await new Promise((r) => setTimeout(r, 5));
    const ids = ["k0", "k1", "k2", "k3"].map((k) => IndexDiskCache.id("s", k, "e"));
    for (const [i, id] of ids.entries()) await cache.put(id, array(`k${i}`, "e"));
    expect(await cache.bytes("index")).toBeLessThanOrEqual(entry * 3);
    // The table was the least recently used file, but of the other bound: it stays.
    expect(await cache.getFile("t.tbl", (b) => b.length)).toBe(4);
    expect(await cache.bytes("table")).toBe(4);
    // A table file evicts the least recently used of the other tables' files, never those of `keep`.
    expect(await cache.putFile("a.1.tbp", new Uint8Array(4), { keep: "a." })).toBe(true);
    expect(await cache.putFile("a.2.tbp", new Uint8Array(4), { keep: "a." })).toBe(true);
    expect(await readdir(dir)).not.toContain("t.tbl");
    // No room left with `reserve` kept free, without evicting `keep`'s: refused, nothing dropped.
    expect(
      await cache.putFile("a.3.tbp", new Uint8Array(1), { keep: "a.", reserve: { name: "a.tbl", bytes: 2 } }),
    ).toBe(false);
    expect(await cache.putFile("b.tbl", new Uint8Array(11))).toBe(false);
    expect((await readdir(dir)).filter((n) => n.endsWith(".tbp")).sort()).toEqual(["a.1.tbp", "a.2.tbp"]);
    expect(await cache.bytes("table")).toBe(8);
    // Found again by a new process's scan, and dropped when its decoder rejects it.
    const again = new IndexDiskCache(dir, entry * 3, 10);
    expect([await again.bytes("index"), await again.bytes("table")]).toEqual([await cache.bytes("index"), 8]);
    expect(await again.getFile("a.1.tbp", (b) => b.length)).toBe(4);
    expect(await again.getFile("a.2.tbp", async () => undefined)).toBeUndefined();
    expect(await readdir(dir)).not.toContain("a.2.tbp");
  });

  it("only misses, never fails, where its directory cannot be made", async () => {
    await writeFile(join(dir, "a-file"), "");
    const cache = new IndexDiskCache(join(dir, "a-file", "index"));
    const id = IndexDiskCache.id("s", "k", "e");
    expect(await cache.put(id, array("k", "e"))).toEqual(array("k", "e"));
    expect(await cache.get(id, { key: "k", etag: "e" })).toBeUndefined();
  });

  it("lives under EC_INDEX_CACHE_DIR, else XDG_CACHE_HOME", () => {
    expect(defaultIndexCacheDir({ EC_INDEX_CACHE_DIR: "/x" })).toBe("/x");
    expect(defaultIndexCacheDir({ XDG_CACHE_HOME: "/c" })).toBe(join("/c", "ec", "index"));
  });
});
