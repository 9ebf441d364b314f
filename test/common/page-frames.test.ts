import { describe, expect, it } from "vitest";
import { FRAME_HEADER, frameHeader, splitFrames } from "../../common/dataset-table/page-frames.js";

const framed = (...pages: Uint8Array[]) => {
  const parts = pages.flatMap((p) => [frameHeader(p.byteLength), p]);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.byteLength), 0);
  return out;
};

describe("splitFrames", () => {
  const a = Uint8Array.of(1, 2, 3);
  const b = Uint8Array.of();
  const c = new Uint8Array(70_000).fill(9);

  it("gives back each page in order, an empty one and one past 64 KiB included", () => {
    expect(splitFrames(framed(a, b, c), 3)).toEqual([a, b, c]);
    expect(frameHeader(70_000)).toEqual(Uint8Array.of(0, 1, 0x11, 0x70));
  });

  it("refuses a body cut short, one with another number of pages, and a torn header", () => {
    const body = framed(a, c);
    expect(() => splitFrames(body.subarray(0, body.byteLength - 1), 2)).toThrow(
      /^Expected 70000 bytes of page 1 but received 69999 before the end$/,
    );
    expect(() => splitFrames(body, 3)).toThrow(/^Expected 3 pages but received 2$/);
    expect(() => splitFrames(body.subarray(0, FRAME_HEADER + 3 + 2), 2)).toThrow(RangeError);
    expect(() => splitFrames(new Uint8Array(0), 1)).toThrow(/^Expected 1 pages but received 0$/);
  });
});
