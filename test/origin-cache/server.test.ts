import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CacheStats, PlanAck, startCache, type CacheService } from "../../origin-cache/index.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { startWanEmulator, type WanEmulator } from "../helpers/wan-emulator.js";
import { objectBytes, tempDir, until } from "./fixtures.js";

const BLOCK = 128 << 10;
const PATH = "/v1/objects/s.mp4";
const data = objectBytes(5 * BLOCK + 4321, "server");
let rs: RangeServer;
let wan: WanEmulator;
let svc: CacheService;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  rs = await startRangeServer();
  rs.put(PATH, data);
  wan = await startWanEmulator({ target: rs.url, rttMs: 1 });
  const d = await tempDir();
  removeDir = d.remove;
  svc = await startCache({
    upstreams: [wan.url],
    dir: d.path,
    maxBytes: 32 << 20,
    blockSize: BLOCK,
    tls: { ca: wan.ca },
    logLevel: "silent",
  });
});
afterAll(async () => {
  await svc.close();
  await wan.close();
  await rs.close();
  await removeDir();
});

const fetchUrl = (path = PATH): string =>
  `${svc.url}/v1/fetch?url=${encodeURIComponent(`${wan.url}${path}?exp=9999999999&sig=x`)}`;

async function get(url: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") {
  const res = await request(url, { method, headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body };
}

describe("startCache HTTP service", () => {
  it("listens on loopback by default", () => {
    expect(new URL(svc.url).hostname).toBe("127.0.0.1");
  });

  it("answers a byte range with 206, Content-Range and the exact bytes", async () => {
    const r = await get(fetchUrl(), { range: `bytes=${BLOCK - 5}-${3 * BLOCK + 5}` });
    expect(r.status).toBe(206);
    expect(r.headers["content-range"]).toBe(`bytes ${BLOCK - 5}-${3 * BLOCK + 5}/${data.length}`);
    expect(r.headers["accept-ranges"]).toBe("bytes");
    expect(r.headers.etag).toBe(rs.etag(PATH));
    expect(r.body.equals(data.subarray(BLOCK - 5, 3 * BLOCK + 6))).toBe(true);
  });

  it("answers suffix and open-ended ranges, and the whole object without a Range", async () => {
    const suffix = await get(fetchUrl(), { range: "bytes=-100" });
    expect(suffix.status).toBe(206);
    expect(suffix.body.equals(data.subarray(data.length - 100))).toBe(true);
    const open = await get(fetchUrl(), { range: `bytes=${data.length - 7}-` });
    expect(open.body.equals(data.subarray(data.length - 7))).toBe(true);
    const whole = await get(fetchUrl());
    expect(whole.status).toBe(200);
    expect(whole.body.equals(data)).toBe(true);
    // Range handling is defined for GET only (RFC 9110 §14.2): a HEAD gets the whole object's headers.
    const head = await get(fetchUrl(), { range: "bytes=0-9" }, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(data.length));
  });

  it("answers 304 without a body when If-None-Match names the pinned ETag, and the bytes otherwise", async () => {
    const etag = rs.etag(PATH) as string;
    const hit = await get(fetchUrl(), { range: "bytes=0-9", "if-none-match": `"other", W/${etag}` });
    expect(hit.status).toBe(304);
    expect(hit.headers.etag).toBe(etag);
    expect(hit.body.length).toBe(0);
    expect((await get(fetchUrl(), { "if-none-match": "*" })).status).toBe(304);
    const miss = await get(fetchUrl(), { range: "bytes=0-9", "if-none-match": '"other"' });
    expect(miss.status).toBe(206);
    expect(miss.body.equals(data.subarray(0, 10))).toBe(true);
  });

  it("answers 416 with the size for a range past the end", async () => {
    const r = await get(fetchUrl(), { range: `bytes=${data.length}-` });
    expect(r.status).toBe(416);
    expect(r.headers["content-range"]).toBe(`bytes */${data.length}`);
    expect(JSON.parse(r.body.toString()).error.code).toBe("ERR_RANGE_NOT_SATISFIABLE");
  });

  it("refuses to fetch from anywhere but its upstreams (403) and says why for a missing url (400)", async () => {
    rs.resetCounts();
    const other = await get(`${svc.url}/v1/fetch?url=${encodeURIComponent(`${rs.url}${PATH}`)}`, {
      range: "bytes=0-1",
    });
    expect(other.status).toBe(403);
    expect(JSON.parse(other.body.toString()).error.code).toBe("ERR_UPSTREAM_NOT_ALLOWED");
    const none = await get(`${svc.url}/v1/fetch`);
    expect(none.status).toBe(400);
    expect(JSON.parse(none.body.toString()).error.message).toMatch(/^Expected a url query parameter/);
    expect(rs.requests()).toBe(0);
  });

  it("passes a missing object through as 404", async () => {
    const r = await get(fetchUrl("/v1/objects/nope.mp4"), { range: "bytes=0-1" });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body.toString()).error.code).toBe("ERR_UPSTREAM_STATUS");
  });

  it("prefetches a posted plan, so the planned reads are hits", async () => {
    const path = "/v1/objects/planned.mp4";
    const planned = objectBytes(3 * BLOCK, "planned");
    rs.put(path, planned);
    const u = `${wan.url}${path}?sig=y`;
    const res = await request(`${svc.url}/v1/plan`, {
      method: "POST",
      body: JSON.stringify({ ranges: [{ url: u, offset: 0, length: planned.length }] }),
    });
    expect(res.statusCode).toBe(200);
    expect(PlanAck.parse(await res.body.json())).toMatchObject({ ranges: 1, blocks: 3 });
    await until(() => svc.stats().plan.prefetchedBlocks >= 3, "the plan to be prefetched");
    const misses = svc.stats().misses;
    const r = await get(`${svc.url}/v1/fetch?url=${encodeURIComponent(u)}`);
    expect(r.body.equals(planned)).toBe(true);
    expect(svc.stats().misses).toBe(misses);
  });

  it("rejects a malformed plan with 400", async () => {
    const res = await request(`${svc.url}/v1/plan`, {
      method: "POST",
      body: JSON.stringify({ ranges: [{ url: "x", offset: -1, length: 1 }] }),
    });
    expect(res.statusCode).toBe(400);
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe("ERR_INVALID_ARGUMENT");
  });

  it("reports stats as JSON and metrics as Prometheus text", async () => {
    const stats = CacheStats.parse(await (await request(`${svc.url}/v1/stats`)).body.json());
    expect(stats.hits).toBeGreaterThan(0);
    expect(stats.bytesFromUpstream).toBeGreaterThan(0);
    expect(stats.httpVersions[wan.url]).toBe("h2");
    expect(stats.upstreamLatencyMs.samples).toBeGreaterThan(0);
    const metrics = await (await request(`${svc.url}/metrics`)).body.text();
    expect(metrics).toMatch(/^ec_cache_hits_total \d+/m);
    expect(metrics).toMatch(/^ec_cache_resident_bytes \d+/m);
  });
});
