import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { signedUrl } from "../../common/sign.js";
import { BASE, errorCode, INDEX_ROUTE, nowSeconds, OBJECTS_ROUTE, put, signed, signPath, withSig } from "./helpers.js";

beforeAll(async () => {
  expect((await put("auth/a.bin", "aaaa")).status).toBe(201);
  expect((await put("auth/b.bin", "bbbb")).status).toBe(201);
});

describe("PUT needs a bearer token from EC_API_TOKENS → 401 otherwise", () => {
  const url = `${BASE}/v1/objects/auth/put.bin`;
  for (const [what, authorization] of [
    ["no header", undefined],
    ["a wrong token", "Bearer test-token-c"],
    ["a prefix of a token", "Bearer test-token-"],
    ["another scheme", "Basic dGVzdC10b2tlbi1hOg=="],
    ["both tokens at once", "Bearer test-token-a,test-token-b"],
    ["an empty bearer", "Bearer "],
  ] as const) {
    it(what, async () => {
      const res = await SELF.fetch(url, { method: "PUT", body: "x", headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await errorCode(res)).toBe("ERR_UNAUTHORIZED");
    });
  }
  it("every configured token works", async () => {
    for (const token of ["test-token-a", "test-token-b"]) {
      const res = await SELF.fetch(url, { method: "PUT", body: "x", headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(201);
    }
  });
  it("the token is checked before the key, so strangers learn nothing about keys", async () => {
    const res = await SELF.fetch(`${BASE}/v1/objects/_ec/x`, { method: "PUT", body: "x" });
    expect(res.status).toBe(401);
  });
});

describe("GET/HEAD need a valid signed URL → 403 otherwise", () => {
  const exp = nowSeconds() + 600;

  it("a genuine signature opens its key for GET and HEAD", async () => {
    const url = await signed("auth/a.bin", exp);
    expect(await (await SELF.fetch(url)).text()).toBe("aaaa");
    expect((await SELF.fetch(url, { method: "HEAD" })).status).toBe(200);
  });

  const forgeries: [string, () => Promise<string>, string][] = [
    ["no exp and sig", async () => `${BASE}${OBJECTS_ROUTE}auth/a.bin`, "ERR_SIGNATURE_INVALID"],
    ["no sig", async () => `${BASE}${OBJECTS_ROUTE}auth/a.bin?exp=${exp}`, "ERR_SIGNATURE_INVALID"],
    ["random bytes as sig", async () => withSig("auth/a.bin", exp, "A".repeat(43)), "ERR_SIGNATURE_INVALID"],
    ["a sig that is not base64url", async () => withSig("auth/a.bin", exp, "%2B%2F%3D%3D"), "ERR_SIGNATURE_INVALID"],
    [
      "a non-numeric exp",
      async () => withSig("auth/a.bin", "soon", await signPath(env.EC_SIGNING_KEY, OBJECTS_ROUTE, "auth/a.bin", exp)),
      "ERR_SIGNATURE_INVALID",
    ],
    [
      "another key's signature",
      async () => withSig("auth/a.bin", exp, await signPath(env.EC_SIGNING_KEY, OBJECTS_ROUTE, "auth/b.bin", exp)),
      "ERR_SIGNATURE_INVALID",
    ],
    [
      "a moved expiry",
      async () =>
        withSig("auth/a.bin", exp + 3600, await signPath(env.EC_SIGNING_KEY, OBJECTS_ROUTE, "auth/a.bin", exp)),
      "ERR_SIGNATURE_INVALID",
    ],
    [
      "another secret",
      async () => signedUrl(BASE, OBJECTS_ROUTE, "auth/a.bin", exp, "not-the-secret"),
      "ERR_SIGNATURE_INVALID",
    ],
    [
      "the index route's signature",
      async () => withSig("auth/a.bin", exp, await signPath(env.EC_SIGNING_KEY, INDEX_ROUTE, "auth/a.bin", exp)),
      "ERR_SIGNATURE_INVALID",
    ],
    ["an expired genuine signature", async () => signed("auth/a.bin", nowSeconds() - 1), "ERR_SIGNATURE_EXPIRED"],
  ];
  for (const [what, make, code] of forgeries) {
    it(what, async () => {
      const url = await make();
      const res = await SELF.fetch(url);
      expect(res.status).toBe(403);
      expect(await errorCode(res)).toBe(code);
      expect((await SELF.fetch(url, { method: "HEAD" })).status).toBe(403);
    });
  }

  it("a bearer token does not replace a signature", async () => {
    const res = await SELF.fetch(`${BASE}${OBJECTS_ROUTE}auth/a.bin`, {
      headers: { authorization: "Bearer test-token-a" },
    });
    expect(res.status).toBe(403);
  });
});
