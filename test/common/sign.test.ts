import { describe, expect, it } from "vitest";
import { INDEX_ROUTE, OBJECTS_ROUTE, signedObjectUrl, signedUrl, signPath, verifyPath } from "../../common/sign.js";

const SECRET = "s3cret";

describe("signPath / verifyPath", () => {
  it("verifies its own signature and nothing else", async () => {
    const sig = await signPath(SECRET, OBJECTS_ROUTE, "a/b.mp4", 2_000_000_000);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await verifyPath(SECRET, OBJECTS_ROUTE, "a/b.mp4", 2_000_000_000, sig)).toBe(true);
    expect(await verifyPath(SECRET, OBJECTS_ROUTE, "a/b.mp4", 2_000_000_001, sig)).toBe(false);
    expect(await verifyPath(SECRET, OBJECTS_ROUTE, "a/c.mp4", 2_000_000_000, sig)).toBe(false);
    expect(await verifyPath(SECRET, INDEX_ROUTE, "a/b.mp4", 2_000_000_000, sig)).toBe(false);
    expect(await verifyPath("other", OBJECTS_ROUTE, "a/b.mp4", 2_000_000_000, sig)).toBe(false);
  });

  it("treats malformed signatures as false, not as errors", async () => {
    for (const sig of ["", "!!!", "A".repeat(42), "A".repeat(44), "a+b/c="]) {
      expect(await verifyPath(SECRET, OBJECTS_ROUTE, "k", 1, sig)).toBe(false);
    }
  });

  it("does not confuse key and expiry boundaries", async () => {
    const sig = await signPath(SECRET, OBJECTS_ROUTE, "a1", 23);
    expect(await verifyPath(SECRET, OBJECTS_ROUTE, "a", 123, sig)).toBe(false);
  });
});

describe("signedUrl", () => {
  it("encodes the key per segment and carries exp and sig", async () => {
    const url = new URL(await signedObjectUrl("http://127.0.0.1:8787/", "my clips/#1.mp4", 2_000_000_000, SECRET));
    expect(url.pathname).toBe("/v1/objects/my%20clips/%231.mp4");
    expect(url.searchParams.get("exp")).toBe("2000000000");
    expect(
      await verifyPath(SECRET, OBJECTS_ROUTE, "my clips/#1.mp4", 2_000_000_000, url.searchParams.get("sig")!),
    ).toBe(true);
  });

  it("signs index URLs under their own route", async () => {
    const url = new URL(await signedUrl("http://e", INDEX_ROUTE, "a.mp4", 5, SECRET));
    expect(url.pathname).toBe("/v1/index/a.mp4");
    expect(await verifyPath(SECRET, INDEX_ROUTE, "a.mp4", 5, url.searchParams.get("sig")!)).toBe(true);
  });
});
