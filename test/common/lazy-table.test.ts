import { describe, expect, it } from "vitest";
import { LazyTable, PAGE_IDS } from "../../common/lazy-table.js";
import { ManifestErrorCode } from "../../common/manifest-sign.js";
import { allEntries, readTable, type TableStore } from "../../common/table-client.js";
import { datasetEntries, seedTableStore } from "../helpers/seed-table.js";

/** 62 objects under three datasets of root d: 31 under d/a/, 21 under d/b/, 10 under d/c/ (in pages of 3, d/b/ starts and ends mid-page). */
const entries = datasetEntries({ a: 31, b: 21, c: 10 });

/** A signed generation of `entries` (etags apart as pins) in pages of 3 and directory pages of 2 pages, in a store that logs what it is asked. */
async function seeded() {
  const { head, store, keys, asked, bodies } = await seedTableStore(entries, {
    root: "d",
    shardBytes: 20_000,
    now: 0,
    pageTarget: 3,
    directoryTarget: 2,
    pinsApart: true,
    logHead: true,
  });
  const directories = new Set(head.directories.map((d) => d.name));
  return { store, keys, asked, bodies, directories };
}

describe("a dataset's table read page by page (what a lazy open reads)", () => {
  it("reads the head and the directory pages at the prefix's edges at open, then each page only when asked", async () => {
    const { store, keys, asked, directories } = await seeded();
    const table = (await LazyTable.open(store, keys, "d/b"))!;
    // 21 pages in 11 directory pages; d/b/ spans pages 10..17 (its first and last shared with d/a/ and d/c/).
    expect(table.range).toEqual({ from: 10, to: 18 });
    expect(asked.filter((n) => !directories.has(n))).toEqual(["head"]);
    expect(asked.filter((n) => directories.has(n)).length).toBeLessThanOrEqual(2);
    expect(table.requests).toBe(asked.length);
    const before = asked.length;
    const page = await table.page(3);
    const read = asked.slice(before);
    // Page 13 of the generation, and the directory page that names it where it was not read.
    expect(read.filter((n) => !directories.has(n))).toEqual([page.ref.name]);
    expect(read.filter((n) => directories.has(n)).length).toBeLessThanOrEqual(1);
    expect(table.requests).toBe(asked.length);
    expect(table.read).toEqual([3]);
  });

  it("holds pages and directory pages within its cache's cap, reading a dropped page again for its objects", async () => {
    const { store, keys, asked } = await seeded();
    const whole = (await readTable(store, keys, "d/b"))!;
    const etags = new Map((await allEntries(whole)).map((e) => [e.key, e.etag]));
    const table = (await LazyTable.open(store, keys, "d/b"))!;
    await table.page(0);
    // A window of one page: only the page and directory page used last are held.
    table.cache.limit(table.cache.least + 64, 1);
    for (let k = 0; k < table.pageCount; k++) {
      const o = table.objects.at(k * PAGE_IDS) ?? (await table.objects.load(k * PAGE_IDS))!;
      expect(await table.etagOf(o)).toBe(etags.get(o.key));
      expect(table.cache.bytes).toBeLessThanOrEqual(table.cache.stats().cap);
    }
    const held = table.cache.stats();
    expect(held.peak_bytes).toBeLessThanOrEqual(held.cap);
    expect(held.evicted_pages).toBeGreaterThan(0);
    expect(table.keptPages.length).toBeLessThan(table.pageCount);
    // Page 0 was dropped before anyone let it go: at() has it no longer, load() reads it (and its directory) again.
    expect(table.objects.at(0)).toBeUndefined();
    const before = asked.length;
    expect((await table.objects.load(0))!.key).toBe(whole.entries.key(0));
    expect(table.read.filter((k) => k === 0)).toHaveLength(2);
    expect(asked.length).toBeGreaterThan(before);
    expect(table.cache.stats().reread_pages).toBe(1);
  });

  it("lists exactly the entries a whole read lists, cut at the prefix's edges, with each page's etags", async () => {
    const { store, keys } = await seeded();
    const whole = (await readTable(store, keys, "d/b"))!;
    const table = (await LazyTable.open(store, keys, "d/b"))!;
    const lazy: { key: string; etag: string }[] = [];
    for (let k = 0; k < table.pageCount; k++) {
      const { entries } = await table.page(k);
      for (let j = 0; j < entries.length; j++) {
        const o = table.objects.at(k * PAGE_IDS + j)!;
        expect(o.key).toBe(entries.key(j));
        lazy.push({ key: o.key, etag: (await table.etagOf(o))! });
      }
    }
    expect(lazy).toEqual((await allEntries(whole)).map((e) => ({ key: e.key, etag: e.etag })));
    expect(lazy.length).toBe(21);
    expect(lazy.every((e) => e.key.startsWith("d/b/"))).toBe(true);
  });

  it("refuses a page whose bytes do not match the digest its directory names", async () => {
    const { store, keys, bodies } = await seeded();
    const table = (await LazyTable.open(store, keys, "d/b"))!;
    const name = (await table.list.pagesAt(12, 13))[0]!.name;
    const bytes = bodies.get(name)!.slice();
    bytes[bytes.length - 1] = bytes.at(-1)! ^ 1;
    bodies.set(name, bytes);
    await expect(table.page(2)).rejects.toMatchObject({ code: ManifestErrorCode.SIGNATURE });
  });

  it("fetches a page ahead without checking or decoding it, and reads it from those bytes when asked", async () => {
    const { store, keys, asked, bodies, directories } = await seeded();
    const table = (await LazyTable.open(store, keys, "d/b"))!;
    const name = (await table.list.pagesAt(12, 13))[0]!.name;
    const bytes = bodies.get(name)!.slice();
    bytes[bytes.length - 1] = bytes.at(-1)! ^ 1;
    bodies.set(name, bytes);
    const before = asked.length;
    table.prefetch(2);
    table.prefetch(2);
    for (let i = 0; i < 8; i++) await new Promise((r) => setImmediate(r));
    // Fetched once, not checked (the bytes are corrupt) nor decoded.
    expect(asked.slice(before).filter((n) => !directories.has(n))).toEqual([name]);
    expect(table.read).toEqual([]);
    expect(table.prefetchedPages).toEqual([2]);
    // Read when asked, from the bytes fetched: no second request, and the digest is checked then.
    await expect(table.page(2)).rejects.toMatchObject({ code: ManifestErrorCode.SIGNATURE });
    expect(asked.slice(before).filter((n) => !directories.has(n))).toEqual([name]);
    expect(table.prefetchedPages).toEqual([]);
    expect(table.requests).toBe(asked.length);
  });

  it("drops an evicted page and reads it again when asked; objects made from it keep their etags", async () => {
    const { store, keys, asked } = await seeded();
    const table = (await LazyTable.open(store, keys, "d/b"))!;
    await table.page(1);
    const o = table.objects.at(PAGE_IDS)!;
    table.evict(1);
    expect(table.keptPages).toEqual([]);
    expect(table.objects.at(PAGE_IDS)).toBeUndefined();
    const before = asked.length;
    // Its own columns answer: the page's pins are fetched, the page is not read again.
    expect(await table.etagOf(o)).toBe(entries.find((e) => e.key === o.key)!.etag);
    expect(asked.slice(before)).toEqual([`pins:${(await table.list.pagesAt(11, 12))[0]!.name}`]);
    expect(o.etag).toBe(await table.etagOf(o));
    await table.page(1);
    expect(table.read).toEqual([1, 1]);
    expect(table.objects.at(PAGE_IDS)!.key).toBe(o.key);
  });

  it("is undefined where the store has no table", async () => {
    const { keys } = await seeded();
    const none: TableStore = { head: async () => undefined, page: async () => new Uint8Array(0) };
    expect(await LazyTable.open(none, keys, "d/b")).toBeUndefined();
  });
});
