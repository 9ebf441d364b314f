import { describe, expect, it } from "vitest";
import { blockId, blockKey } from "../../../origin-cache/store/block-id.js";

describe("blockKey", () => {
  it("tells apart every (key, etag, index) and ignores the rest of a pin", () => {
    const pin = { key: "/v1/objects/a.mp4", etag: '"e1"', size: 1 << 20 };
    const keys = new Set([
      blockKey(blockId(pin, 0)),
      blockKey(blockId(pin, 1)),
      blockKey(blockId({ ...pin, etag: '"e2"' }, 0)),
      blockKey(blockId({ ...pin, key: "/v1/objects/b.mp4" }, 0)),
    ]);
    expect(keys.size).toBe(4);
    expect(blockKey(blockId(pin, 3))).toBe(blockKey({ key: pin.key, etag: pin.etag, index: 3 }));
    expect(blockId(pin, 3)).toEqual({ key: pin.key, etag: pin.etag, index: 3 });
  });
});
