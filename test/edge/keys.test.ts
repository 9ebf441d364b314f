import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, errorCode, TOKEN, withSig } from "./helpers.js";

// Raw paths as a client could send them; `.`/`..` segments only survive URL parsing percent-encoded.
const invalid: [string, string][] = [
  ["an empty key", ""],
  ["a .. segment", "a%2F..%2Fb"],
  ["a . segment", "a/%2E%2Fb"],
  ["a leading /", "%2Fabs"],
  ["a backslash", "a%5Cb"],
  ["a NUL", "a%00b"],
  ["a newline", "a%0Ab"],
  ["DEL", "a%7Fb"],
  ["an empty segment", "a%2F%2Fb"],
  ["a trailing /", "a/"],
  ["the reserved prefix _ec/", "_ec/index/x"],
  ["over 1024 bytes", "k".repeat(1025)],
  ["1024 bytes in two-byte characters plus one", "%C3%A9".repeat(512) + "x"],
  ["broken percent-encoding", "a%ZZb"],
];

describe("invalid keys → 400 ERR_INVALID_KEY", () => {
  for (const [what, path] of invalid) {
    it(`PUT: ${what}`, async () => {
      const res = await SELF.fetch(`${BASE}/v1/objects/${path}`, {
        method: "PUT",
        body: "x",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("ERR_INVALID_KEY");
      expect(body.error.message).toMatch(/^Expected /);
    });
    it(`GET: ${what}`, async () => {
      const res = await SELF.fetch(`${BASE}/v1/objects/${path}?exp=9999999999&sig=x`);
      expect(res.status).toBe(400);
      expect(await errorCode(res)).toBe("ERR_INVALID_KEY");
    });
  }

  it("1024 bytes exactly, spaces and unicode are fine", async () => {
    for (const key of ["k".repeat(1024), "my videos/été 2024/clip #1.mp4"]) {
      const path = key.split("/").map(encodeURIComponent).join("/");
      const res = await SELF.fetch(`${BASE}/v1/objects/${path}`, {
        method: "PUT",
        body: "ok",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.status).toBe(201);
      expect(((await res.json()) as { key: string }).key).toBe(key);
      // The signature check comes after the key check: a valid key with a bad sig is a 403.
      expect((await SELF.fetch(withSig(key, 9999999999, "x"))).status).toBe(403);
    }
  });
});
