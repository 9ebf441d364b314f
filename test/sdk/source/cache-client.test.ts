import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManifestError, ManifestErrorCode } from "../../../common/manifest-sign.js";
import { startCache, type CacheService } from "../../../origin-cache/index.js";
import { relayedCode, SdkError } from "../../../sdk/errors.js";
import { inProcessCache, remoteCache, type ByteCache } from "../../../sdk/source/cache-client.js";
import { isAuthFailure } from "../../../sdk/source/edge-source.js";
import { tempDir } from "../../origin-cache/fixtures.js";

// An edge that refuses /expired/ as an expired signature would and knows no /missing/.
let edge: Server;
let edgeUrl: string;
let svc: CacheService;
let removeDir: () => Promise<void>;
const caches: ByteCache[] = [];

beforeAll(async () => {
  edge = createServer((req, res) => {
    const refused = req.url?.startsWith("/v1/objects/expired/");
    res.writeHead(refused ? 403 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: refused ? "ERR_SIGNATURE_EXPIRED" : "ERR_NOT_FOUND", message: "no" } }));
  });
  await new Promise<void>((r) => edge.listen(0, "127.0.0.1", r));
  edgeUrl = `http://127.0.0.1:${(edge.address() as AddressInfo).port}`;
  const d = await tempDir();
  removeDir = d.remove;
  svc = await startCache({ upstreams: [edgeUrl], dir: d.path, maxBytes: 1 << 20, logLevel: "silent" });
});
afterAll(async () => {
  for (const c of caches) await c.close();
  await svc?.close();
  await new Promise((r) => edge?.close(r));
  await removeDir?.();
});

const open = {
  "an origin-cache service": async () => remoteCache(svc.url),
  "the in-process cache": async () => inProcessCache(edgeUrl, 1 << 20),
};

describe("a refused read keeps the HTTP status and code it came with", () => {
  for (const [name, make] of Object.entries(open)) {
    it(`through ${name}: 403 is an auth failure, 404 is not`, async () => {
      const cache = await make();
      caches.push(cache);
      const refused = await cache
        .read(`${edgeUrl}/v1/objects/expired/a.mp4?exp=1&sig=x`, 0, 10, undefined)
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "ERR_UPSTREAM_STATUS", status: 403 });
      expect(isAuthFailure(refused)).toBe(true);
      const missing = await cache
        .read(`${edgeUrl}/v1/objects/missing/a.mp4?exp=1&sig=x`, 0, 10, undefined)
        .catch((e: unknown) => e);
      expect(missing).toMatchObject({ code: "ERR_UPSTREAM_STATUS", status: 404 });
      expect(isAuthFailure(missing)).toBe(false);
    });
  }
});

describe("isAuthFailure branches on code and status, never on the message", () => {
  it("an index fetch the edge refused is one", () => {
    expect(
      isAuthFailure(new ManifestError(ManifestErrorCode.HTTP, "/v1/index/a.mp4 answered 401", { status: 401 })),
    ).toBe(true);
  });
  it("a message that reads like a refusal is not, nor a 403 of another kind", () => {
    expect(isAuthFailure(new Error("Upstream answered 403 for the URL"))).toBe(false);
    expect(isAuthFailure(new SdkError("ERR_CACHE_HTTP", "origin-cache answered 403 for bytes 0+10"))).toBe(false);
    expect(
      isAuthFailure(new SdkError(relayedCode("ERR_UPSTREAM_NOT_ALLOWED"), "Expected a URL under …", { status: 403 })),
    ).toBe(false);
  });
});
