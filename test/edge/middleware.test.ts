import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { signPath } from "../../common/sign.js";
import { renderError } from "../../edge/http/error-response.js";
import { bearerAuth } from "../../edge/middleware/bearer-auth.js";
import { objectKey } from "../../edge/middleware/object-key.js";
import { signedUrlAuth } from "../../edge/middleware/signed-url.js";
import type { EdgeEnv } from "../../edge/types.js";

function tokenApp(tokens: string | undefined): Hono<EdgeEnv> {
  const app = new Hono<EdgeEnv>();
  app.onError(renderError);
  app.get("/", bearerAuth({ tokens: () => tokens }), (c) => c.text("in"));
  return app;
}

describe("bearerAuth", () => {
  it("trims the configured list and ignores empty entries", async () => {
    const app = tokenApp(" alpha , beta ,, ");
    for (const token of ["alpha", "beta"]) {
      expect((await app.request("/", { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    }
    expect((await app.request("/", { headers: { authorization: "Bearer " } })).status).toBe(401);
    expect((await app.request("/", { headers: { authorization: "bearer alpha" } })).status).toBe(200); // scheme is case-insensitive
  });

  it("lets nobody in when no token is configured", async () => {
    for (const tokens of [undefined, "", " , "]) {
      const res = await tokenApp(tokens).request("/", { headers: { authorization: "Bearer " } });
      expect(res.status).toBe(401);
      expect((await tokenApp(tokens).request("/", { headers: { authorization: "Bearer x" } })).status).toBe(401);
    }
  });
});

describe("signedUrlAuth", () => {
  const NOW = 1_900_000_000;
  const app = new Hono<EdgeEnv>();
  app.onError(renderError);
  app.get(
    "/v1/things/*",
    objectKey({ route: "/v1/things/" }),
    signedUrlAuth({ route: "/v1/things/", secret: () => "k", now: () => NOW }),
    (c) => c.text(c.var.key),
  );
  const url = async (key: string, exp: number) =>
    `/v1/things/${key}?exp=${exp}&sig=${await signPath("k", "/v1/things/", key, exp)}`;

  it("accepts a URL up to and including its expiry second, not after", async () => {
    expect(await (await app.request(await url("a/b", NOW))).text()).toBe("a/b");
    const late = await app.request(await url("a/b", NOW - 1));
    expect(late.status).toBe(403);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe("ERR_SIGNATURE_EXPIRED");
  });

  it("covers the route it was made for, so other routes can share the secret safely", async () => {
    const sig = await signPath("k", "/v1/objects/", "a/b", NOW + 60);
    expect((await app.request(`/v1/things/a/b?exp=${NOW + 60}&sig=${sig}`)).status).toBe(403);
  });

  it("answers 500 that leaks nothing when the secret is missing", async () => {
    const bare = new Hono<EdgeEnv>();
    bare.onError(renderError);
    bare.get(
      "/v1/things/*",
      objectKey({ route: "/v1/things/" }),
      signedUrlAuth({ route: "/v1/things/", secret: () => undefined }),
      (c) => c.text("in"),
    );
    const res = await bare.request(await url("a", NOW + 60));
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain("EC_SIGNING_KEY");
  });
});
