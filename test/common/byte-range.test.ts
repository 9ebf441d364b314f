import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  contentRange,
  ifRangeHolds,
  parseContentRange,
  parseRange,
  unsatisfiedRange,
} from "../../common/byte-range.js";

describe("parseRange properties", () => {
  it("a partial range always lies inside the object and is what the spec asks", () => {
    fc.assert(
      fc.property(fc.nat(1e9), fc.nat(2e9), fc.option(fc.nat(2e9), { nil: undefined }), (size, a, b) => {
        const header = `bytes=${a}-${b ?? ""}`;
        const d = parseRange(header, size);
        if (b !== undefined && b < a) expect(d.kind).toBe("ignore");
        else if (a >= size) expect(d.kind).toBe("unsatisfiable");
        else expect(d).toEqual({ kind: "partial", start: a, end: Math.min(b ?? Infinity, size - 1) });
      }),
    );
  });

  it("a suffix range selects the last min(n, size) bytes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e9 }), fc.integer({ min: 1, max: 2e9 }), (size, n) => {
        expect(parseRange(`bytes=-${n}`, size)).toEqual({
          kind: "partial",
          start: Math.max(0, size - n),
          end: size - 1,
        });
      }),
    );
  });

  it("never throws on arbitrary header text", () => {
    fc.assert(
      fc.property(fc.string(), fc.nat(), (header, size) => {
        expect(["ignore", "unsatisfiable", "partial"]).toContain(parseRange(header, size).kind);
      }),
    );
  });
});

describe("Content-Range out and in", () => {
  it("reads back what it writes", () => {
    fc.assert(
      fc.property(fc.nat(1e12), fc.nat(1e12), fc.nat(1e12), (a, len, extra) => {
        const size = a + len + 1 + extra;
        expect(parseContentRange(contentRange(a, a + len, size))).toEqual({ start: a, end: a + len, size });
        expect(parseContentRange(unsatisfiedRange(size))).toEqual({ size });
      }),
    );
  });
  it("an unknown size, and what is not a byte Content-Range", () => {
    expect(parseContentRange("bytes 0-9/*")).toEqual({ start: 0, end: 9 });
    for (const bad of [
      undefined,
      null,
      "",
      "bytes */*",
      "bytes 9-0/10",
      "items 0-1/2",
      "bytes 0-1",
      "bytes=0-1/2",
      "bytes -1-2/3",
    ]) {
      expect(parseContentRange(bad)).toBeUndefined();
    }
  });
});

describe("ifRangeHolds", () => {
  const lastModified = new Date("2026-01-02T03:04:05.678Z");
  it("one strong entity tag equal to the current one", () => {
    expect(ifRangeHolds(undefined, { etag: '"a"' })).toBe(true);
    expect(ifRangeHolds(' "a" ', { etag: '"a"' })).toBe(true);
    expect(ifRangeHolds('"b"', { etag: '"a"' })).toBe(false);
    expect(ifRangeHolds('W/"a"', { etag: '"a"' })).toBe(false);
    expect(ifRangeHolds('"a"', { etag: 'W/"a"' })).toBe(false);
    expect(ifRangeHolds('"b", "a"', { etag: '"a"' })).toBe(false);
  });
  it("an HTTP date equal to Last-Modified to the second, and only where it is known", () => {
    const date = lastModified.toUTCString();
    expect(ifRangeHolds(date, { etag: '"a"', lastModified })).toBe(true);
    expect(ifRangeHolds(new Date(lastModified.getTime() - 1000).toUTCString(), { etag: '"a"', lastModified })).toBe(
      false,
    );
    expect(ifRangeHolds(date, { etag: '"a"' })).toBe(false);
    expect(ifRangeHolds("not a date", { etag: '"a"', lastModified })).toBe(false);
  });
});
