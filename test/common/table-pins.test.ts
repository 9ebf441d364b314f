import { generateKeyPairSync } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { describe, expect, it, vi } from "vitest";
import { sha256 } from "../../common/dataset-table/digest.js";
import { EntryColumns } from "../../common/dataset-table/entry-columns.js";
import { decodeDirectory } from "../../common/dataset-table/directory.js";
import { buildGeneration } from "../../common/dataset-table/generation.js";
import { decodePins, encodePins, pageEntries } from "../../common/dataset-table/page-pins.js";
import { SetDigest } from "../../common/dataset-table/set-digest.js";
import { manifestSigner, publicKeys, signJson } from "../../common/manifest-sign.js";
import type { TableEntryV1, TableHeadV1, TablePageRefV1 } from "../../common/schema/index.js";
import { allEntries, readTable, type TableStore } from "../../common/table-client.js";
import { type PinPart, TablePins } from "../../common/table-pins.js";

const etags = (page: number, n: number) => Array.from({ length: n }, (_, i) => `"${page}-${i}"`);

/** Four pages of three entries, their pins as a store holds them, and the loads asked for. */
async function pinsOf(capacity: number) {
  const stored = new Map<string, Uint8Array>();
  const parts: PinPart[] = [];
  for (let p = 0; p < 4; p++) {
    const bytes = encodePins(etags(p, 3));
    stored.set(`1-${p}`, bytes);
    const ref: TablePageRefV1 = {
      name: `1-${p}`,
      first: "",
      last: "",
      count: 3,
      bytes: 0,
      sha256: "",
      pins: await sha256(bytes),
    };
    parts.push({ ref, start: 3 * p, count: 3, from: 0 });
  }
  const loads: string[] = [];
  const load = async (ref: TablePageRefV1) => (loads.push(ref.name), stored.get(ref.name)!);
  return { pins: new TablePins(parts, load, sha256, undefined, capacity), loads };
}

describe("a table's pins", () => {
  it("round-trip MD5 and text etags, and refuse a count that is not the page's", () => {
    const md5 = ['"0123456789abcdef0123456789abcdef"', '"ffffffffffffffffffffffffffffffff"'];
    const text = ['"a"', 'W/"b-ü"', ""];
    for (const list of [md5, text]) {
      const got = decodePins(encodePins(list), list.length);
      expect(Array.from({ length: got.length }, (_, i) => got.etag(i))).toEqual(list);
    }
    expect(encodePins(md5).byteLength).toBe(16 + 2 * 16);
    expect(() => decodePins(encodePins(md5), 3)).toThrow(
      expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT", message: "Expected pins for 3 entries but received 2" }),
    );
  });

  it("are fetched once per page however many readers ask, and kept for the last `capacity` pages only", async () => {
    const { pins, loads } = await pinsOf(2);
    await Promise.all([pins.ready(0), pins.ready(1), pins.ready(2), pins.ready(4)]);
    expect(loads).toEqual(["1-0", "1-1"]);
    expect(pins.etag(4)).toBe('"1-1"');
    await pins.ready(7);
    // Page 0, the least recently used, made room for page 2.
    expect(() => pins.etag(0)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PINS_NOT_READY" }));
    expect(pins.etag(7)).toBe('"2-1"');
    await pins.ready(0);
    expect(loads).toEqual(["1-0", "1-1", "1-2", "1-0"]);
    expect(pins.fetched).toBe(4);
  });

  it("pin an object the columns made by its own entry, with no search by key; any other by key", async () => {
    const { pins, loads } = await pinsOf(4);
    const listed = Array.from(
      { length: 12 },
      (_, i): TableEntryV1 => ({
        key: `d/${String(i).padStart(2, "0")}`,
        size: 100 + i,
        etag: "",
        kind: "video",
      }),
    );
    const made = EntryColumns.from(listed).columns;
    const entries = new EntryColumns({ ...made, etags: new Uint8Array(0), etagEnd: new Uint32Array(0), apart: true });
    const table = entries.withPins(pins);
    const object = table.at(7)!;
    const search = vi.spyOn(table, "indexOf");
    await table.objectPinned(object);
    expect(search).not.toHaveBeenCalled();
    expect(loads).toEqual(["1-2"]);
    // Its four fields, nothing else: it compares and serializes as a listing's object.
    expect(object).toEqual({ key: "d/07", size: 107, etag: '"2-1"', kind: "video" });
    expect(JSON.parse(JSON.stringify(object))).toEqual({ key: "d/07", size: 107, etag: '"2-1"', kind: "video" });
    // A copy, or an object of other columns, is found by key.
    await table.objectPinned({ ...object, key: "d/01" });
    await table.objectPinned(entries.withPins(pins).at(4)!);
    expect(search).toHaveBeenCalledTimes(2);
    expect(loads).toEqual(["1-2", "1-0", "1-1"]);
  });
});

describe("a table whose older pages hold their etags and newer ones keep them apart", () => {
  const entry = (key: string, etag: string): TableEntryV1 => ({ key, size: 10, etag, kind: "other" });
  const keys = ["d/a", "d/b", "d/s/c", "d/s/d", "d/s/e", "d/s/f", "d/t", "d/u", "d/v"];

  it("reads every entry's etag from where its page keeps it, and the same digest", async () => {
    const signer = await manifestSigner(
      generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
    );
    const stored = new Map<string, Uint8Array>();
    const store = (pages: { name: string; gz: Uint8Array; pins?: Uint8Array }[]) => {
      for (const p of pages) {
        stored.set(`${p.name}.json`, new Uint8Array(gunzipSync(p.gz)));
        if (p.pins) stored.set(`${p.name}.pins`, new Uint8Array(gunzipSync(p.pins)));
      }
    };
    const o = { root: "d", shardBytes: 1 << 20, now: 0, pageTarget: 3 };
    const first = keys.map((k, i) => entry(k, `"${i}"`));
    // Generation 1 as an edge before the pins wrote it; generation 2 rewrites the page of d/s/c only, which the prefix d/s cuts.
    const g1 = await buildGeneration(undefined, new Map(first.map((e) => [e.key, e])), async () => [], o);
    store(g1.pages);
    const changed = entry("d/s/c", '"new"');
    const load = async (ref: TablePageRefV1) =>
      pageEntries(stored.get(`${ref.name}.json`)!, stored.get(`${ref.name}.pins`));
    const directory = async (ref: { name: string }) => decodeDirectory(stored.get(`${ref.name}.json`)!);
    const g2 = await buildGeneration(g1.head, new Map([[changed.key, changed]]), load, {
      ...o,
      pinsApart: true,
      directory,
    });
    store(g2.pages);
    const pages = (await Promise.all(g2.head.directories.map(directory))).flat();
    expect(pages.map((p) => p.pins !== undefined)).toEqual([true, false, false]);
    const signed = await signJson(g2.head satisfies TableHeadV1, signer);
    const asked: string[] = [];
    const tableStore: TableStore = {
      head: async () => signed,
      page: async (name) => stored.get(`${name}.json`)!,
      pins: async (name) => (asked.push(name), stored.get(`${name}.pins`)!),
    };
    const expected = first.map((e) => (e.key === changed.key ? changed : e));
    for (const prefix of ["d", "d/s"]) {
      asked.length = 0;
      const listed = expected.filter((e) => e.key.startsWith(`${prefix}/`));
      const table = (await readTable(tableStore, Promise.resolve(publicKeys([signer])), prefix))!;
      // Whole pages are summed up by the head; a page the prefix cuts is digested entry by entry, pins and all.
      expect(asked).toEqual(prefix === "d" ? [] : ["2-0"]);
      expect(await allEntries(table)).toEqual(listed);
      expect(table.digest).toBe(listed.reduce((d, e) => d.add(e.key, e.etag), new SetDigest()).toString());
    }
  });
});
