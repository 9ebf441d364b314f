import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { encodeKeyPath } from "../../common/keys.js";
import { signedObjectUrl, signingKeyId } from "../../common/sign.js";
import app from "../../edge/app.js";
import { buildManifestPage } from "../../edge/manifest/build-manifest.js";
import { signUrls } from "../../edge/table/dataset-ops.js";
import { MAX_URLS_BODY_BYTES } from "../../edge/routes/table.js";
import { MAX_SIDECAR_BYTES } from "../../edge/labels/sidecar.js";
import { BASE, errorCode, nowSeconds, OBJECTS_ROUTE, put, signPath, TOKEN } from "./helpers.js";

const KEY = "trust/a.bin";
const DAY = 24 * 3600;

async function stored(): Promise<void> {
  const res = await put(KEY, new Uint8Array(64).fill(7));
  expect(res.status).toBe(201);
  await res.body?.cancel();
}

/** A body of `total` bytes without a Content-Length, counting the bytes the edge pulled from it. */
function chunkedBody(total: number, chunk = 64 << 10): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      const n = Math.min(chunk, total - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
  return { body, pulled: () => sent };
}

describe("object reads", () => {
  it("carry X-Content-Type-Options: nosniff, on GET, HEAD and 206", async () => {
    await stored();
    const url = await signedObjectUrl(BASE, KEY, nowSeconds() + 600, env.EC_SIGNING_KEY);
    for (const init of [{}, { method: "HEAD" }, { headers: { range: "bytes=0-9" } }]) {
      const res = await SELF.fetch(url, init);
      expect(res.status).toBeLessThan(300);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      await res.body?.cancel();
    }
  });
});

describe("signed URL lifetime", () => {
  it("refuses a genuine signature whose exp lies past EC_URL_MAX_TTL_SECONDS (7 days) with ERR_SIGNATURE_LIFETIME", async () => {
    await stored();
    const exp = nowSeconds() + 8 * DAY;
    const sig = await signPath(env.EC_SIGNING_KEY, OBJECTS_ROUTE, KEY, exp);
    const res = await SELF.fetch(`${BASE}${OBJECTS_ROUTE}${encodeKeyPath(KEY)}?exp=${exp}&sig=${sig}`);
    expect(res.status).toBe(403);
    expect(await errorCode(res)).toBe("ERR_SIGNATURE_LIFETIME");
    // Six days is within the default bound; a bound of one hour refuses it.
    const six = await signedObjectUrl(BASE, KEY, nowSeconds() + 6 * DAY, env.EC_SIGNING_KEY);
    expect((await SELF.fetch(six, { method: "HEAD" })).status).toBe(200);
    const short = await app.request(six, { method: "HEAD" }, { ...env, EC_URL_MAX_TTL_SECONDS: "3600" });
    expect(short.status).toBe(403);
  });

  it("signs nothing for longer than the bound: a TTL past it is refused, not shortened", async () => {
    const longer = { ...env, EC_URL_TTL_SECONDS: String(8 * DAY) } as Env;
    await expect(buildManifestPage(longer, { prefix: "trust", edge: BASE })).rejects.toMatchObject({
      code: "ERR_INTERNAL",
      cause: expect.objectContaining({ message: expect.stringContaining("EC_URL_MAX_TTL_SECONDS") }),
    });
    await expect(
      signUrls(longer, { prefix: "trust", edge: BASE, body: { objects: [{ key: KEY, etag: '"e"' }] } }),
    ).rejects.toMatchObject({ code: "ERR_INTERNAL" });
    const fine = await signUrls(env, { prefix: "trust", edge: BASE, body: { objects: [{ key: KEY, etag: '"e"' }] } });
    expect(fine.expiresAt - nowSeconds()).toBeLessThanOrEqual(7 * DAY);
  });
});

describe("signing key rotation", () => {
  it("URLs name their key (kid); the previous key verifies its URLs while EC_SIGNING_KEY_PREVIOUS holds it", async () => {
    await stored();
    const old = env.EC_SIGNING_KEY;
    const next = "rotated-signing-key-fedcba9876543210";
    const url = await signedObjectUrl(BASE, KEY, nowSeconds() + 600, old);
    expect(new URL(url).searchParams.get("kid")).toBe(await signingKeyId(old));
    expect(await signingKeyId(next)).not.toBe(await signingKeyId(old));

    const during = { ...env, EC_SIGNING_KEY: next, EC_SIGNING_KEY_PREVIOUS: old };
    const after = { ...env, EC_SIGNING_KEY: next };
    expect((await app.request(url, { method: "HEAD" }, during)).status).toBe(200);
    const fresh = await signedObjectUrl(BASE, KEY, nowSeconds() + 600, next);
    expect((await app.request(fresh, { method: "HEAD" }, during)).status).toBe(200);
    const gone = await app.request(url, {}, after);
    expect(gone.status).toBe(403);
    expect(await errorCode(gone)).toBe("ERR_SIGNATURE_INVALID");
    // The manifest signs with the current key and names it.
    const page = await buildManifestPage(during as Env, { prefix: "trust", edge: BASE });
    const manifest = JSON.parse(page.payload) as { objects: { url: string }[] };
    for (const o of manifest.objects) expect(new URL(o.url).searchParams.get("kid")).toBe(await signingKeyId(next));
  });
});

describe("bodies are bounded before they are buffered", () => {
  it("a label sidecar without a Content-Length is refused with 413 once it passes the limit", async () => {
    const total = 64 << 20;
    const { body, pulled } = chunkedBody(total);
    const res = await SELF.fetch(`${BASE}/v1/labels/0123456789abcdef/9e1f00aa/0-16-1`, {
      method: "PUT",
      body,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(413);
    expect(await errorCode(res)).toBe("ERR_PAYLOAD_TOO_LARGE");
    expect(pulled()).toBeLessThan(total / 4);
    expect(MAX_SIDECAR_BYTES).toBeLessThan(total / 4);
  });

  it("a /urls body without a Content-Length is refused with 413 once it passes the limit", async () => {
    const total = 64 << 20;
    const { body, pulled } = chunkedBody(total);
    const res = await SELF.fetch(`${BASE}/v1/datasets/trust/urls`, {
      method: "POST",
      body,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
    expect(await errorCode(res)).toBe("ERR_PAYLOAD_TOO_LARGE");
    expect(pulled()).toBeLessThan(total / 4);
    expect(MAX_URLS_BODY_BYTES).toBeLessThan(total / 4);
    // A declared length past the limit is refused without reading the body.
    const declared = await SELF.fetch(`${BASE}/v1/datasets/trust/urls`, {
      method: "POST",
      body: new Uint8Array(MAX_URLS_BODY_BYTES + 1).fill(0x20),
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(declared.status).toBe(413);
    await declared.body?.cancel();
  });
});
