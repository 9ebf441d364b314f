import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchManifest } from "../../common/manifest-client.js";
import { createRangeCache, CacheStats } from "../../origin-cache/index.js";
import { devCache } from "../../sdk/dev/cache-service.js";
import { startLocalEdge, type LocalEdge } from "../../sdk/dev/index.js";
import { startWanEmulator, type WanEmulator } from "../helpers/wan-emulator.js";
import { objectBytes, prng } from "./fixtures.js";

const BLOCK = 256 << 10;
const data = objectBytes(5 * BLOCK + 777, "edge-e2e");
let dir: string;
let edge: LocalEdge;
let wan: WanEmulator;
let signedUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-cache-edge-"));
  edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  const put = await fetch(`${edge.url}/v1/objects/cache-e2e/a.bin`, {
    method: "PUT",
    body: new Uint8Array(data),
    headers: { authorization: `Bearer ${edge.token}` },
  });
  expect(put.status).toBe(201);
  const manifest = await fetchManifest(`${edge.url}/v1/datasets/cache-e2e`, { token: edge.token });
  signedUrl = (manifest.objects[0] as { url: string }).url;
  wan = await startWanEmulator({ target: edge.url, rttMs: 5 });
}, 180_000);

afterAll(async () => {
  await wan?.close();
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("origin-cache against the real local edge", () => {
  it("reads byte-exact ranges of a signed edge URL through TLS + HTTP/2", async () => {
    const cacheDir = join(dir, "cache");
    const cache = await createRangeCache({
      upstreams: [wan.url],
      dir: cacheDir,
      maxBytes: 64 << 20,
      blockSize: BLOCK,
      tls: { ca: wan.ca },
      logLevel: "silent",
    });
    try {
      // The signature covers key and expiry, not the host, so the URL works through the WAN front.
      const url = signedUrl.replace(edge.url, wan.url);
      const rnd = prng(7);
      const ranges = Array.from({ length: 100 }, () => {
        const offset = Math.floor(rnd() * data.length);
        return { offset, length: 1 + Math.floor(rnd() * Math.min(data.length - offset, 2 * BLOCK)) };
      });
      const got = await Promise.all(ranges.map((r) => cache.read(url, r.offset, r.length)));
      ranges.forEach((r, i) =>
        expect(Buffer.from(got[i] as Uint8Array).equals(data.subarray(r.offset, r.offset + r.length))).toBe(true),
      );
      const s = cache.stats();
      expect(Object.values(s.httpVersions)).toEqual(["h2"]);
      expect(s.bytesFromUpstream).toBeLessThanOrEqual(data.length + 1);
    } finally {
      await cache.close();
    }
  });

  it("runs beside the edge in ec dev and serves its signed URLs", async () => {
    const svc = await devCache.start({ port: 0, quiet: true }, { edge: edge.url });
    try {
      const base = svc.fields.cache as string;
      const res = await request(`${base}/v1/fetch?url=${encodeURIComponent(signedUrl)}`, {
        headers: { range: "bytes=100-199" },
      });
      expect(res.statusCode).toBe(206);
      expect(Buffer.from(await res.body.arrayBuffer()).equals(data.subarray(100, 200))).toBe(true);
      const stats = CacheStats.parse(await (await request(`${base}/v1/stats`)).body.json());
      expect(stats.misses).toBe(1);
    } finally {
      await svc.stop();
    }
  });
});
