import { describe, expect, it } from "vitest";
import { FRAME_HEADER, FrameSplitter, frameHeader, splitFrames } from "../../common/dataset-table/page-frames.js";

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

describe("FrameSplitter", () => {
  const pages = [Uint8Array.of(1, 2, 3), Uint8Array.of(), new Uint8Array(5000).fill(7), Uint8Array.of(4)];
  const body = framed(...pages);

  it("gives each page once the chunk that completes it arrives, wherever the chunks are cut", () => {
    for (const size of [1, 2, 3, 4, 5, 7, 4096, body.byteLength]) {
      const split = new FrameSplitter(pages.length);
      const got: Uint8Array[] = [];
      let firstOut = -1;
      for (let at = 0; at < body.byteLength; at += size) {
        got.push(...split.push(body.subarray(at, at + size)));
        if (firstOut < 0 && got.length > 0) firstOut = at + size;
      }
      split.end();
      expect(got).toEqual(pages);
      // The first page (7 bytes framed) is out as soon as its bytes are, not at the end of the body.
      expect(firstOut).toBe(Math.ceil(7 / size) * size);
    }
  });

  it("refuses a body cut short, with more pages than asked, or a torn header", () => {
    const cut = new FrameSplitter(4);
    cut.push(body.subarray(0, body.byteLength - 1));
    expect(() => cut.end()).toThrow(/^Expected 1 bytes of page 3 but received 0 before the end$/);
    expect(() => new FrameSplitter(3).push(body)).toThrow(/^Expected 3 pages but received more at byte/);
    const torn = new FrameSplitter(4);
    torn.push(body.subarray(0, FRAME_HEADER + 3 + 2));
    expect(() => torn.end()).toThrow(/^Expected a 4-byte page length at byte 7 but received the end of the body$/);
  });
});
