import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ManifestError, ManifestErrorCode } from "../../../common/manifest-sign.js";
import { startCache, type CacheService } from "../../../origin-cache/index.js";
import { relayedCode, SdkError } from "../../../sdk/errors.js";
import { bodyInto, inProcessCache, remoteCache, type ByteCache } from "../../../sdk/source/cache-client.js";
import { isAuthFailure } from "../../../sdk/source/edge-source.js";
import { ReadPool, releaseRead } from "../../../common/read-pool.js";
import { startRangeServer } from "../../helpers/range-server.js";
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
        .read(`${edgeUrl}/v1/objects/expired/a.mp4?exp=9999999999&sig=x`, 0, 10, undefined)
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "ERR_UPSTREAM_STATUS", status: 403 });
      expect(isAuthFailure(refused)).toBe(true);
      // Past its exp: refused by the cache itself, and still an auth failure the SDK renews on.
      const expired = await cache
        .read(`${edgeUrl}/v1/objects/missing/b.mp4?exp=1&sig=x`, 0, 10, undefined)
        .catch((e: unknown) => e);
      expect(expired).toMatchObject({ code: "ERR_SIGNATURE_EXPIRED", status: 403 });
      expect(isAuthFailure(expired)).toBe(true);
      const missing = await cache
        .read(`${edgeUrl}/v1/objects/missing/a.mp4?exp=9999999999&sig=x`, 0, 10, undefined)
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

describe("reads over GET /v1/fetch", () => {
  it("land in pooled memory that a released read hands to the next, byte-exact", async () => {
    const origin = await startRangeServer();
    const d = await tempDir();
    const service = await startCache({ upstreams: [origin.url], dir: d.path, maxBytes: 4 << 20, logLevel: "silent" });
    const data = randomBytes(256 << 10);
    origin.put("/v1/objects/pool/a.mp4", data);
    const url = `${origin.url}/v1/objects/pool/a.mp4?exp=9999999999&sig=x`;
    const cache = await remoteCache(service.url, undefined, { local: false });
    try {
      const first = await cache.read(url, 1000, 50_000, undefined);
      expect(Buffer.from(first).equals(data.subarray(1000, 51_000))).toBe(true);
      const memory = first.buffer;
      releaseRead(first);
      const second = await cache.read(url, 70_000, 50_000, undefined);
      expect(Buffer.from(second).equals(data.subarray(70_000, 120_000))).toBe(true);
      // The first read's memory, handed back, serves the second: no buffer of its own per read.
      expect(second.buffer).toBe(memory);
    } finally {
      await cache.close();
      await service.close();
      await origin.close();
      await d.remove();
    }
  });
});

describe("pin", () => {
  const pinners = {
    "an origin-cache service (HEAD /v1/fetch)": (svc: CacheService) => remoteCache(svc.url),
    "the in-process cache": (_svc: CacheService, origin: string) => inProcessCache(origin, 4 << 20),
  };
  for (const [name, make] of Object.entries(pinners)) {
    it(`through ${name}: probes each object once, pulls none of its bytes, and its reads probe no more`, async () => {
      const origin = await startRangeServer();
      const d = await tempDir();
      const service = await startCache({ upstreams: [origin.url], dir: d.path, maxBytes: 4 << 20, logLevel: "silent" });
      const data = randomBytes(64 << 10);
      origin.put("/v1/objects/pin/a.mp4", data);
      origin.put("/v1/objects/pin/b.mp4", data);
      const url = (k: string) => `${origin.url}/v1/objects/pin/${k}.mp4?exp=9999999999&sig=x`;
      const cache = await make(service, origin.url);
      try {
        cache.pin!([{ url: url("a") }, { url: url("b") }]);
        await vi.waitFor(() => expect(origin.requests()).toBe(2));
        expect([origin.requests("/v1/objects/pin/a.mp4"), origin.requests("/v1/objects/pin/b.mp4")]).toEqual([1, 1]);
        // The probe's one byte each, no range of the objects.
        await cache.refresh();
        expect(cache.stats().bytesFetched).toBeLessThanOrEqual(2);
        const got = await cache.read(url("a"), 1000, 5000, undefined);
        expect(Buffer.from(got).equals(data.subarray(1000, 6000))).toBe(true);
        // The read pulled its range and nothing else: the object's version was known.
        expect(origin.requests("/v1/objects/pin/a.mp4")).toBe(2);
      } finally {
        await cache.close();
        await service.close();
        await origin.close();
        await d.remove();
      }
    });
  }
});

describe("a 206 body that fails midway", () => {
  // Answers 206 with 30,000 bytes, then ends (short of 50,000), sends more (long) or resets.
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const how = new URL(req.url ?? "/", "http://x").pathname.slice(1);
      res.writeHead(206, { "content-type": "application/octet-stream" });
      res.write(Buffer.alloc(30_000, 1));
      if (how === "reset") setTimeout(() => res.socket?.destroy(), 20);
      else res.end(how === "long" ? Buffer.alloc(30_000, 2) : undefined);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  for (const how of ["short", "long", "reset"]) {
    it(`gives its pooled buffer back when the body is ${how}`, async () => {
      const pool = new ReadPool();
      const into = pool.take(50_000);
      const res = await request(`${base}/${how}`);
      await expect(bodyInto(res.body, into)).rejects.toThrow();
      expect(pool.stats().idleBytes).toBeGreaterThan(0);
      expect(pool.take(50_000).buffer).toBe(into.buffer);
      expect(pool.stats().reuses).toBe(1);
    });
  }
});
