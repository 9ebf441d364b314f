import { describe, expect, it } from "vitest";
import { sha256 } from "../../common/dataset-table/digest.js";
import { decodePins, encodePins } from "../../common/dataset-table/page-pins.js";
import type { TablePageRefV1 } from "../../common/schema/index.js";
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
});
