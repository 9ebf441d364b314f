import { generateKeyPairSync } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchIndex, fetchManifest, manifestPages, parseDatasetUrl } from "../../common/manifest-client.js";
import { ManifestErrorCode, manifestSigner, publicKeys, signManifest } from "../../common/manifest-sign.js";
import { encodeIndex } from "../../common/media-index/index.js";
import type { ManifestV1, SignedManifestV1 } from "../../common/schema/index.js";

const pkcs8 = () =>
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64");
const KEY = pkcs8();
const OTHER_KEY = pkcs8();
const TOKEN = "secret-token";

/** How the test server misbehaves on the next manifest pages. */
let mode:
  | "ok"
  | "tamper"
  | "other-key"
  | "expired"
  | "other-dataset"
  | "stray-key"
  | "foreign-index"
  | "foreign-object"
  | "other-route" = "ok";
let server: Server;
let base: string;
/** An internal service a forged manifest would aim at: it must receive nothing. */
let bystander: Server;
let inside: string;
let bystanderHits = 0;

function pageOf(n: number, cursor: string | null, now: number): ManifestV1 {
  const objects = Array.from({ length: 3 }, (_, i) => {
    const key = mode === "stray-key" && i === 1 ? "elsewhere/x.mp4" : `ds/p${n}-${i}.mp4`;
    return {
      key,
      size: 10 * (i + 1),
      etag: `"e${n}${i}"`,
      kind: "video" as const,
      url:
        mode === "foreign-object" && i === 2
          ? `${inside}/admin?k=${key}`
          : mode === "other-route" && i === 2
            ? `${base}/v1/datasets/ds/manifest`
            : `${base}/v1/objects/${key}?exp=1&sig=x`,
      indexUrl:
        mode === "foreign-index" && i === 2 ? `${inside}/latest/meta-data/` : `${base}/v1/index/${key}?exp=1&sig=x`,
    };
  });
  return {
    version: 1,
    dataset: mode === "other-dataset" ? "other" : "ds",
    edge: base,
    createdAt: now,
    expiresAt: mode === "expired" ? now - 1 : now + 600,
    objects,
    shards: [
      { id: n * 2, first: 0, count: 2, bytes: 30 },
      { id: n * 2 + 1, first: 2, count: 1, bytes: 30 },
    ],
    cursor,
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url!, base);
      if (url.pathname === "/v1/keys") {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(publicKeys([await manifestSigner(KEY)])));
        return;
      }
      if (url.pathname === "/v1/datasets/ds/manifest") {
        if (req.headers.authorization !== `Bearer ${TOKEN}`) {
          res.statusCode = 401;
          res.end(JSON.stringify({ error: { code: "ERR_UNAUTHORIZED", message: "A valid bearer token is required" } }));
          return;
        }
        const n = Number(url.searchParams.get("cursor") ?? "0");
        const page = pageOf(n, n < 2 ? String(n + 1) : null, Math.floor(Date.now() / 1000));
        let signed: SignedManifestV1 = await signManifest(
          page,
          await manifestSigner(mode === "other-key" ? OTHER_KEY : KEY),
        );
        if (mode === "other-key") signed = { ...signed, keyId: (await manifestSigner(KEY)).keyId };
        if (mode === "tamper" && n === 1)
          signed = { ...signed, payload: signed.payload.replace('"size":10,', '"size":11,') };
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(signed));
        return;
      }
      if (url.pathname.startsWith("/v1/index/redirect")) {
        res.statusCode = 302;
        res.setHeader("location", `${inside}/latest/meta-data/`);
        res.end();
        return;
      }
      if (url.pathname.startsWith("/v1/index/")) {
        res.end(
          encodeIndex({
            version: 1,
            key: "ds/a.jpg",
            etag: "e",
            size: 10,
            kind: "image",
            image: { format: "jpeg", width: 2, height: 2, channels: 3 },
          }),
        );
        return;
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { code: "ERR_NOT_FOUND", message: "No such route" } }));
    })();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  bystander = createServer((_req, res) => {
    bystanderHits++;
    res.end("secret");
  });
  await new Promise<void>((r) => bystander.listen(0, "127.0.0.1", r));
  inside = `http://127.0.0.1:${(bystander.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await new Promise<void>((r) => bystander.close(() => r()));
});

describe("manifest client", () => {
  it("follows cursors, verifies every page and merges shards with global offsets", async () => {
    mode = "ok";
    const m = await fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN });
    expect(m.pages).toBe(3);
    expect(m.objects.map((o) => o.key)).toEqual([0, 1, 2].flatMap((n) => [0, 1, 2].map((i) => `ds/p${n}-${i}.mp4`)));
    expect(m.shards.map((s) => [s.id, s.first, s.count])).toEqual([
      [0, 0, 2],
      [1, 2, 1],
      [2, 3, 2],
      [3, 5, 1],
      [4, 6, 2],
      [5, 8, 1],
    ]);
  });

  it("a page altered in transit fails with ERR_MANIFEST_SIGNATURE after the good pages", async () => {
    mode = "tamper";
    const seen: number[] = [];
    const run = async () => {
      for await (const page of manifestPages(`${base}/v1/datasets/ds`, { token: TOKEN }))
        seen.push(page.objects.length);
    };
    await expect(run()).rejects.toMatchObject({ name: "ManifestError", code: ManifestErrorCode.SIGNATURE });
    expect(seen).toEqual([3]);
  });

  it("a page signed by another key fails", async () => {
    mode = "other-key";
    await expect(fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN })).rejects.toMatchObject({
      code: ManifestErrorCode.SIGNATURE,
    });
  });

  it("pinned keys that do not include the signer fail with ERR_MANIFEST_UNKNOWN_KEY", async () => {
    mode = "ok";
    const keys = publicKeys([await manifestSigner(OTHER_KEY)]);
    await expect(fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN, keys })).rejects.toMatchObject({
      code: ManifestErrorCode.UNKNOWN_KEY,
    });
  });

  it("expired, wrong-dataset and out-of-prefix pages fail", async () => {
    for (const [m, code] of [
      ["expired", ManifestErrorCode.EXPIRED],
      ["other-dataset", ManifestErrorCode.INVALID],
      ["stray-key", ManifestErrorCode.INVALID],
    ] as const) {
      mode = m;
      await expect(fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN }), m).rejects.toMatchObject({ code });
    }
  });

  it("asks for the keys and the first page at once, and a failed key fetch still fails the manifest", async () => {
    mode = "ok";
    const log: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slowKeys: typeof fetch = async (input, init) => {
      const path = new URL(String(input)).pathname;
      log.push(`start ${path}`);
      // The keys answer once the page was asked for (or after 2 s, when nothing asks meanwhile).
      if (path === "/v1/keys") await Promise.race([held, new Promise((r) => setTimeout(r, 2000))]);
      else release();
      const res = await fetch(input, init);
      log.push(`answer ${path}`);
      return res;
    };
    const m = await fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN, fetch: slowKeys });
    expect(m.pages).toBe(3);
    expect(log.slice(0, 2)).toEqual(["start /v1/keys", "start /v1/datasets/ds/manifest"]);
    expect(log.indexOf("start /v1/datasets/ds/manifest")).toBeLessThan(log.indexOf("answer /v1/keys"));
    const noKeys: typeof fetch = async (input, init) =>
      new URL(String(input)).pathname === "/v1/keys" ? new Response("down", { status: 503 }) : fetch(input, init);
    await expect(fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN, fetch: noKeys })).rejects.toMatchObject({
      code: ManifestErrorCode.HTTP,
      message: expect.stringContaining("/v1/keys answered 503"),
    });
  });

  it("a missing token surfaces the edge's error code", async () => {
    mode = "ok";
    await expect(fetchManifest(`${base}/v1/datasets/ds`)).rejects.toMatchObject({
      code: ManifestErrorCode.HTTP,
      message: expect.stringContaining("ERR_UNAUTHORIZED"),
    });
  });

  it("fetchIndex decodes an index from its URL", async () => {
    expect(await fetchIndex(`${base}/v1/index/ds/a.jpg?exp=1&sig=x`)).toMatchObject({
      kind: "image",
      image: { width: 2 },
    });
    await expect(fetchIndex(`${base}/nope`)).rejects.toMatchObject({ code: ManifestErrorCode.HTTP });
  });

  it("a validly signed manifest with URLs of another origin or route fails with ERR_MANIFEST_FOREIGN_URL", async () => {
    for (const m of ["foreign-index", "foreign-object", "other-route"] as const) {
      mode = m;
      await expect(fetchManifest(`${base}/v1/datasets/ds`, { token: TOKEN }), m).rejects.toMatchObject({
        name: "ManifestError",
        code: ManifestErrorCode.FOREIGN_URL,
      });
    }
    mode = "ok";
    await expect(fetchIndex(`${inside}/latest/meta-data/?exp=1&sig=x`, { edge: base })).rejects.toMatchObject({
      code: ManifestErrorCode.FOREIGN_URL,
    });
    expect(bystanderHits).toBe(0);
  });

  it("follows no redirect from the edge: ERR_MANIFEST_REDIRECT, and the target is never asked", async () => {
    await expect(fetchIndex(`${base}/v1/index/redirect?exp=1&sig=x`, { edge: base })).rejects.toMatchObject({
      code: ManifestErrorCode.REDIRECT,
      status: 302,
    });
    expect(bystanderHits).toBe(0);
  });

  it("parseDatasetUrl takes the URL apart and refuses others", () => {
    expect(parseDatasetUrl("http://h:1/v1/datasets/a/b/")).toEqual({ edge: "http://h:1", prefix: "a/b" });
    for (const bad of ["nope", "ftp://h/v1/datasets/a", "http://h/v1/objects/a", "http://h/v1/datasets/"]) {
      expect(() => parseDatasetUrl(bad), bad).toThrow(expect.objectContaining({ code: ManifestErrorCode.INVALID }));
    }
  });
});
