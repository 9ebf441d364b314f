/**
 * No byte without a valid signature: the cache, in front of the real local edge, serves what it
 * holds of an object only for a URL the edge accepts now. A URL without its signature, a forged
 * one or an expired one gets a 403 from /v1/fetch and from /v1/locate, even for bytes already
 * cached; an expired one without asking the edge; each new URL costs one edge request, once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchManifest } from "../../common/manifest-client.js";
import { signedObjectUrl } from "../../common/sign.js";
import { CacheStats, startCache, type CacheService } from "../../origin-cache/index.js";
import { startLocalEdge, type LocalEdge } from "../../sdk/dev/index.js";
import { objectBytes } from "./fixtures.js";

const BLOCK = 64 << 10;
const KEY = "signed-urls/a.bin";
const data = objectBytes(3 * BLOCK + 99, "signed-urls");
let dir: string;
let edge: LocalEdge;
let svc: CacheService;
let signed: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-cache-signed-"));
  edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  const put = await fetch(`${edge.url}/v1/objects/${KEY}`, {
    method: "PUT",
    body: new Uint8Array(data),
    headers: { authorization: `Bearer ${edge.token}` },
  });
  expect(put.status).toBe(201);
  const manifest = await fetchManifest(`${edge.url}/v1/datasets/signed-urls`, { token: edge.token });
  signed = (manifest.objects[0] as { url: string }).url;
  svc = await startCache({
    upstreams: [edge.url],
    dir: join(dir, "cache"),
    maxBytes: 8 << 20,
    blockSize: BLOCK,
    logLevel: "silent",
    retries: 0,
  });
}, 180_000);

afterAll(async () => {
  await svc?.close();
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function fetchVia(url: string, range = "bytes=0-99"): Promise<{ status: number; body: Buffer }> {
  const res = await request(`${svc.url}/v1/fetch?url=${encodeURIComponent(url)}`, { headers: { range } });
  return { status: res.statusCode, body: Buffer.from(await res.body.arrayBuffer()) };
}

async function locate(body: object): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(`${svc.url}/v1/locate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}

async function upstreamRequests(): Promise<number> {
  return CacheStats.parse(await (await request(`${svc.url}/v1/stats`)).body.json()).upstreamRequests;
}

function code(body: Buffer | Record<string, unknown>): unknown {
  const json = Buffer.isBuffer(body) ? (JSON.parse(body.toString()) as Record<string, unknown>) : body;
  return (json.error as { code?: unknown } | undefined)?.code;
}

describe("cached bytes leave the cache only for a URL the edge accepts now", () => {
  it("refuses a bare, forged or expired URL for an object it holds, on /v1/fetch and /v1/locate", async () => {
    const warm = await fetchVia(signed, `bytes=0-${data.length - 1}`);
    expect(warm.status).toBe(206);
    expect(warm.body.equals(data)).toBe(true);
    const located = await locate({ url: signed, offset: 0, length: 100 });
    expect(located.status).toBe(200);

    const bare = signed.slice(0, signed.indexOf("?"));
    const sig = new URL(signed).searchParams.get("sig") as string;
    const forged = signed.replace(`sig=${sig}`, `sig=${sig.slice(0, -2)}${sig.endsWith("AA") ? "BB" : "AA"}`);
    for (const url of [bare, forged, `${bare}?exp=9999999999&sig=${sig}`]) {
      const r = await fetchVia(url);
      expect(r.status, url).toBe(403);
      expect(code(r.body), url).toBe("ERR_UPSTREAM_STATUS");
      const l = await locate({ url, offset: 0, length: 100 });
      expect(l.status, url).toBe(403);
      // The batched form answers null for a span it may not name, as for one it does not hold.
      const batch = await locate({ spans: [{ url, offset: 0, length: 100 }] });
      expect(batch.json.spans, url).toEqual([null]);
    }

    // A refusal is remembered: the same forged URL again asks the edge nothing.
    const before = await upstreamRequests();
    expect((await fetchVia(forged)).status).toBe(403);
    expect(await upstreamRequests()).toBe(before);

    // Past its exp: refused by the cache itself, typed, without a request to the edge.
    const expired = signed.replace(/exp=\d+/, `exp=${Math.floor(Date.now() / 1000) - 5}`);
    const late = await fetchVia(expired);
    expect(late.status).toBe(403);
    expect(code(late.body)).toBe("ERR_SIGNATURE_EXPIRED");
    const lateLocate = await locate({ url: expired, offset: 0, length: 100 });
    expect(lateLocate.status).toBe(403);
    expect(code(lateLocate.json)).toBe("ERR_SIGNATURE_EXPIRED");
    expect(await upstreamRequests()).toBe(before);
  });

  it("checks a new signed URL of a cached object with one edge request, then serves it from disk", async () => {
    expect((await fetchVia(signed)).status).toBe(206);
    const resigned = await signedObjectUrl(edge.url, KEY, Math.floor(Date.now() / 1000) + 600, edge.signingKey);
    expect(resigned).not.toBe(signed);
    const before = await upstreamRequests();
    for (let i = 0; i < 3; i++) {
      const r = await fetchVia(resigned, `bytes=${BLOCK - 10}-${2 * BLOCK + 10}`);
      expect(r.status).toBe(206);
      expect(r.body.equals(data.subarray(BLOCK - 10, 2 * BLOCK + 11))).toBe(true);
    }
    expect(await upstreamRequests()).toBe(before + 1);
    const batch = await locate({ spans: [{ url: resigned, offset: 0, length: 100 }] });
    expect((batch.json.spans as unknown[])[0]).not.toBeNull();
    expect(await upstreamRequests()).toBe(before + 1);
  });
});
