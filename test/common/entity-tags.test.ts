import { describe, expect, it } from "vitest";
import { matchesWeak, sameWeak } from "../../common/entity-tags.js";

describe("one weak ETag comparison", () => {
  it("ignores weakness and quotes, never the opaque part", () => {
    expect(sameWeak('W/"v1"', '"v1"')).toBe(true);
    expect(sameWeak("v1", '"v1"')).toBe(true);
    expect(sameWeak(' "v1" ', 'W/"v1"')).toBe(true);
    expect(sameWeak('"v1"', '"v2"')).toBe(false);
    expect(sameWeak('"v1"', '"v1 "')).toBe(false);
  });

  it("If-None-Match's list comparison agrees with it", () => {
    expect(matchesWeak('W/"a", "b"', '"b"')).toBe(true);
    expect(matchesWeak('W/"a"', '"a"')).toBe(true);
    expect(matchesWeak('"a"', '"c"')).toBe(false);
    expect(matchesWeak("*", '"c"')).toBe(true);
  });
});
