import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeKeyPath, isValidKey, keyProblem, MAX_KEY_BYTES } from "../../common/keys.js";

describe("keyProblem", () => {
  it.each([
    ["", /non-empty/],
    ["a/../b", /"\." or "\.\." segments/],
    ["./a", /"\." or "\.\." segments/],
    ["..", /"\." or "\.\." segments/],
    ["/abs", /start with \//],
    ["a\\b", /backslashes/],
    ["a\u0000b", /control/],
    ["a\u0085b", /control/],
    ["a//b", /empty segments/],
    ["a/", /empty segments/],
    ["_ec/index/x", /reserved prefix/],
    ["x".repeat(MAX_KEY_BYTES + 1), /at most 1024 UTF-8 bytes/],
  ])("%j is refused", (key, message) => {
    expect(keyProblem(key)).toMatch(message);
    expect(keyProblem(key)).toMatch(/^Expected /);
  });

  it("says what came when it is not a string", () => {
    expect(keyProblem(42)).toBe("Expected an object key as a non-empty string but received 42");
  });

  it.each(["a.mp4", "a/b/c.mp4", "...", "a..b/c", "_ec", "ec_/x", "été/🎬.mp4", "x".repeat(MAX_KEY_BYTES)])(
    "%j is fine",
    (key) => {
      expect(isValidKey(key)).toBe(true);
    },
  );
});

describe("encodeKeyPath", () => {
  it("round-trips every valid key through a URL path", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, unit: "grapheme" }), { minLength: 1, maxLength: 4 }),
        (segments) => {
          const key = segments.join("/");
          fc.pre(isValidKey(key));
          const url = new URL(`http://x/v1/objects/${encodeKeyPath(key)}`);
          expect(decodeURIComponent(url.pathname.slice("/v1/objects/".length))).toBe(key);
        },
      ),
    );
  });
});
