import { describe, expect, it } from "vitest";
import { decodeDirectory } from "../../common/dataset-table/directory.js";
import { countPageShards } from "../../common/page-shards.js";
import { openTable, readTable, type TableStore } from "../../common/table-client.js";
import { datasetEntries, seedTableStore } from "../helpers/seed-table.js";

/** 60 objects under three datasets of root d: 30 under d/a/, 20 under d/b/, 10 under d/c/. */
const entries = datasetEntries({ a: 30, b: 20, c: 10 });

/** A signed generation of `entries` in pages of 2 and directory pages of 4 pages, in a store that counts what it is asked. */
async function seeded() {
  const seeded = await seedTableStore(entries, {
    root: "d",
    shardBytes: 20_000,
    now: 0,
    pageTarget: 2,
    directoryTarget: 4,
  });
  const { head, bodies } = seeded;
  const all = head.directories.flatMap((d) => decodeDirectory(bodies.get(d.name)!));
  return { ...seeded, all };
}

describe("a generation's page list, read lazily from its directory pages", () => {
  it("names directory pages in the head with their totals, not pages", async () => {
    const { head, all } = await seeded();
    expect(head.version).toBe(2);
    expect(head.directories.map((d) => d.pages)).toEqual([4, 4, 4, 4, 4, 4, 4, 2]);
    expect(head.directories.reduce((n, d) => n + d.count, 0)).toBe(60);
    expect(all.map((p) => p.count)).toEqual(new Array(30).fill(2));
    // Each page's shard count under the page-local rule, and each directory's sum.
    for (const p of all) {
      const mine = entries.filter((e) => e.key >= p.first && e.key <= p.last);
      expect(p.shards).toBe(
        countPageShards(
          mine.map((e) => e.key),
          mine.map((e) => e.size),
          head.shardBytes,
        ),
      );
    }
    expect(head.directories.reduce((n, d) => n + d.shards!, 0)).toBe(all.reduce((n, p) => n + p.shards!, 0));
  });

  it("reads only the directory pages a range of pages falls into, each once", async () => {
    const { store, keys, asked, all, head } = await seeded();
    const list = (await openTable(store, keys))!;
    expect(list.pageCount).toBe(30);
    expect(list.entryCount).toBe(60);
    expect(asked).toEqual([]);
    expect(await list.pagesAt(9, 11)).toEqual(all.slice(9, 11));
    expect(asked).toEqual([head.directories[2]!.name]);
    expect(await list.pagesAt(7, 13)).toEqual(all.slice(7, 13));
    expect(asked).toEqual([2, 1, 3].map((d) => head.directories[d]!.name));
    expect(await list.pagesAt(5, 5)).toEqual([]);
    expect(await list.pageOfEntry(37)).toEqual({ page: 18, offset: 1 });
    expect(asked).toHaveLength(4);
    expect(await list.pagesAt(0, 30)).toEqual(all);
    expect(asked).toHaveLength(8);
    await expect(list.pagesAt(0, 31)).rejects.toThrow("Expected a page range within [0, 30] but received [0, 31)");
  });

  it("finds the pages a prefix spans reading at most the two directory pages at its edges", async () => {
    const { store, keys, asked } = await seeded();
    const list = (await openTable(store, keys))!;
    expect(await list.rangeUnder("d/b/")).toEqual({ from: 15, to: 25 });
    expect(asked).toHaveLength(2);
    expect(await list.rangeUnder("d/")).toEqual({ from: 0, to: 30 });
    expect(await list.rangeUnder("e/")).toEqual({ from: 0, to: 0 });
    const table = (await readTable(store, keys, "d/b"))!;
    expect(table.entries.entries().map((e) => e.key)).toEqual(entries.slice(30, 50).map((e) => e.key));
    expect(table.pages.map((p) => p.first)).toEqual(
      entries
        .slice(30, 50)
        .filter((_, i) => i % 2 === 0)
        .map((e) => e.key),
    );
  });

  it("refuses a directory page that is not the one its head names", async () => {
    const { store, keys, head, bodies } = await seeded();
    const forged: TableStore = { ...store, page: async () => bodies.get(head.directories[0]!.name)! };
    const list = (await openTable(forged, keys))!;
    await expect(list.pagesAt(8, 9)).rejects.toMatchObject({ code: "ERR_MANIFEST_SIGNATURE" });
  });

  it("holds directory pages within its cache's cap, reading (and checking) the least recently used again", async () => {
    const { store, keys, asked, all, head, bodies } = await seeded();
    const list = (await openTable(store, keys))!;
    const name = (d: number) => head.directories[d]!.name;
    const largest = Math.max(...head.directories.map((d) => bodies.get(d.name)!.byteLength));
    // Two directory pages at most (a window of no table page).
    list.cache.limit(2 * largest, 0);
    expect(await list.pagesAt(0, 12)).toEqual(all.slice(0, 12));
    expect(asked).toEqual([0, 1, 2].map(name));
    const held = list.cache.stats();
    expect(held).toMatchObject({ directory_pages: 2, evicted_directory_pages: 1, reread_directory_pages: 0 });
    expect(held.peak_bytes).toBeLessThanOrEqual(2 * largest);
    // Directory 2 is held, 0 was dropped: read again, and checked again against its signed digest.
    expect(await list.pagesAt(8, 9)).toEqual(all.slice(8, 9));
    expect(asked).toHaveLength(3);
    bodies.set(name(0), bodies.get(name(1))!);
    await expect(list.pagesAt(0, 1)).rejects.toMatchObject({ code: "ERR_MANIFEST_SIGNATURE" });
    expect(asked).toHaveLength(4);
    expect(list.cache.stats().peak_bytes).toBeLessThanOrEqual(2 * largest);
    // A cap under one directory page is refused, naming the option.
    expect(() => list.cache.limit(list.cache.least - 1, 0)).toThrow(/raise tableCacheBytes/);
  });

  it("still reads a head of format 1, which lists its pages itself", async () => {
    const { store, keys, head, all, asked, resign } = await seeded();
    const { directories, version, ...rest } = head;
    await resign({ ...rest, version: 1, pages: all });
    const list = (await openTable(store, keys))!;
    expect(list.head.version).toBe(1);
    expect(await list.pagesAt(3, 6)).toEqual(all.slice(3, 6));
    expect(await list.pageOfEntry(59)).toEqual({ page: 29, offset: 1 });
    expect(asked).toEqual([]);
    const table = (await readTable(store, keys, "d"))!;
    expect(table.entries.entries().map((e) => e.key)).toEqual(entries.map((e) => e.key));
  });

  it("refuses a head of a newer format with what to do", async () => {
    const { store, keys, head, resign } = await seeded();
    await resign({ ...head, version: 3 });
    await expect(openTable(store, keys)).rejects.toThrow(
      "Expected a dataset table head of format 1 to 2 but received format 3 (written by a newer edge: update ec)",
    );
  });
});
