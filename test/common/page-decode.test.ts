import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodePage } from "../../common/dataset-table/page-decode.js";
import { TablePageV1 } from "../../common/schema/index.js";

/** What zod makes of the text: the page, or the error's issues. */
function viaZod(text: string): unknown {
  const got = TablePageV1.safeParse(JSON.parse(text));
  return got.success ? { page: got.data } : { issues: got.error.issues };
}

function viaDecode(text: string): unknown {
  try {
    return { page: decodePage(text) };
  } catch (err) {
    return { issues: (err as { issues?: unknown }).issues ?? String(err) };
  }
}

/** Values near each field's bounds, of the right and of wrong types. */
const edgeValues: unknown[] = [
  ...[0, 1, -1, 1.5, 2 ** 53, 2 ** 53 - 1, -0, 64, "", "video", "h264", "vp8", "error", null, true],
  ...[[], [0, 6], [0, -1], [0.5], [2 ** 53], ["0"], {}, { code: "ERR_X", message: "m" }, { code: 1 }],
];
const anyValue = fc.oneof(fc.constantFrom(...edgeValues), fc.integer(), fc.string());
const fields = ["key", "size", "etag", "kind", "frames", "keyframes", "codec", "width", "height", "error", "extra"];
const field = fc.constantFrom(...fields);
const good = {
  key: "d/a.mp4",
  size: 20000,
  etag: '"0123"',
  kind: "video",
  frames: 24,
  keyframes: [0, 6, 12],
  codec: "h264",
  width: 64,
  height: 48,
};

describe("decodePage", () => {
  it("gives what TablePageV1.parse gives, for each field set to each value near its bounds", () => {
    for (const k of fields) {
      for (const v of edgeValues) {
        const text = JSON.stringify({ version: 1, root: "d", entries: [good, { ...good, [k]: v }] });
        expect(viaDecode(text), `${k}: ${JSON.stringify(v)}`).toEqual(viaZod(text));
      }
      const { [k]: _, ...without } = good as Record<string, unknown>;
      const text = JSON.stringify({ version: 1, root: "d", entries: [without] });
      expect(viaDecode(text), `without ${k}`).toEqual(viaZod(text));
    }
  });

  it("gives what TablePageV1.parse gives, for entries near and past every field's bounds", () => {
    const entry = fc
      .tuple(
        fc.dictionary(field, anyValue, { maxKeys: 2 }),
        fc.subarray(["frames", "keyframes", "codec", "width", "height"], { maxLength: 2 }),
      )
      .map(([changes, drop]) => {
        const e: Record<string, unknown> = { ...good, ...changes };
        for (const k of drop) delete e[k];
        return e;
      });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 2 }), fc.constantFrom(1, 2), (entries, version) => {
        const text = JSON.stringify({ version, root: "d", entries });
        expect(viaDecode(text)).toEqual(viaZod(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("strips a page field it does not know, as zod does", () => {
    const text = JSON.stringify({ version: 1, root: "d", entries: [good], more: 1 });
    expect(decodePage(text)).toEqual({ version: 1, root: "d", entries: [good] });
  });

  it("takes a plain page as it is, and reports a bad entry with zod's error", () => {
    expect(decodePage(JSON.stringify({ version: 1, root: "d", entries: [good] })).entries).toEqual([good]);
    expect(() => decodePage(JSON.stringify({ version: 1, root: "d", entries: [{ ...good, size: -1 }] }))).toThrow(
      /size/,
    );
  });
});
