import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseRange } from "../../edge/http/range.js";

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
        expect(parseRange(`bytes=-${n}`, size)).toEqual({ kind: "partial", start: Math.max(0, size - n), end: size - 1 });
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
