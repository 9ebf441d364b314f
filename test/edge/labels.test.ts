import { env, SELF } from "cloudflare:test";
import { describe, expect, test } from "vitest";
import { EdgeLabelCache } from "../../sdk/labels/cache/edge-cache.js";
import { sidecarPath } from "../../sdk/labels/cache/label-cache.js";
import type { ClipLabelsV1, LabelSidecarV1 } from "../../common/schema/labels-v1.js";
import { BASE, errorCode, TOKEN } from "./helpers.js";

const labels: ClipLabelsV1 = {
  valid: false,
  flags: ["black"],
  results: { black: { valid: false, flags: ["black"], values: { blackRatio: 1, cuts: [3, 9] } } },
};
const key = { key: "ds/a.mp4", etag: '"9e1f00aa"', start: 32, frames: 16, stride: 1, config: "0123456789abcdef" };
const path = sidecarPath(key)!;
const sidecar: LabelSidecarV1 = { version: 1, ...key, labels };

function call(method: string, p: string, body?: string, token: string | null = TOKEN): Promise<Response> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return SELF.fetch(`${BASE}/v1/labels/${p}`, { method, body, headers });
}

describe("/v1/labels sidecars", () => {
  test("PUT stores under _ec/labels/ and GET returns it, both with the bearer token", async () => {
    expect(path).toBe("0123456789abcdef/9e1f00aa/32-16-1");
    const put = await call("PUT", path, JSON.stringify(sidecar));
    expect(put.status).toBe(201);
    await put.body?.cancel();
    expect(await env.BUCKET.head(`_ec/labels/${path}.json`)).not.toBeNull();
    const got = await call("GET", path);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(sidecar);
  });

  test("without a valid token both ways answer 401", async () => {
    for (const [method, token] of [
      ["GET", null],
      ["PUT", null],
      ["GET", "wrong"],
      ["PUT", "wrong"],
    ] as const) {
      const res = await call(method, path, method === "PUT" ? JSON.stringify(sidecar) : undefined, token);
      expect(res.status, `${method} ${token}`).toBe(401);
      expect(await errorCode(res)).toBe("ERR_UNAUTHORIZED");
    }
  });

  test("an absent sidecar is 404; bad paths and bodies are 400 with a reason", async () => {
    const missing = await call("GET", "0123456789abcdef/9e1f00aa/0-16-1");
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe("ERR_NOT_FOUND");
    for (const bad of ["NOTHEX/9e1f00aa/0-16-1", "0123456789abcdef/9e1f00aa/0-16", "0123456789abcdef/a.b/0-16-1"]) {
      const res = await call("GET", bad);
      expect(res.status, bad).toBe(400);
      expect(await errorCode(res)).toBe("ERR_BAD_REQUEST");
    }
    const mismatch = await call("PUT", "0123456789abcdef/9e1f00aa/0-16-1", JSON.stringify(sidecar));
    expect(mismatch.status).toBe(400);
    expect(((await mismatch.json()) as { error: { message: string } }).error.message).toMatch(
      /Expected a sidecar for .*0-16-1 but received one for .*32-16-1/,
    );
    const junk = await call("PUT", path, JSON.stringify({ version: 1, labels: 3 }));
    expect(junk.status).toBe(400);
    await junk.body?.cancel();
    const huge = await call("PUT", path, JSON.stringify({ ...sidecar, key: "x".repeat(300 * 1024) }));
    expect(huge.status).toBe(413);
    expect(await errorCode(huge)).toBe("ERR_PAYLOAD_TOO_LARGE");
    const notJson = await call("PUT", path, "{");
    expect(notJson.status).toBe(400);
    await notJson.body?.cancel();
  });

  test("EdgeLabelCache round-trips through the route; a miss is undefined", async () => {
    const cache = new EdgeLabelCache({
      edge: BASE,
      token: TOKEN,
      fetch: (input, init) => SELF.fetch(input as string, init),
    });
    const k = { ...key, start: 48 };
    expect(await cache.get(k)).toBeUndefined();
    await cache.put(k, labels);
    expect(await cache.get(k)).toEqual(labels);
    const denied = new EdgeLabelCache({
      edge: BASE,
      token: "nope",
      fetch: (input, init) => SELF.fetch(input as string, init),
    });
    await expect(denied.get(k)).rejects.toMatchObject({ code: "ERR_LABEL_CACHE" });
  });
});
