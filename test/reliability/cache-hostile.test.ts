/**
 * Hostile clients against the origin-cache service: URLs that try to make it an open proxy,
 * fuzzed Range headers and query strings on /v1/fetch, fuzzed JSON bodies on /v1/plan and
 * /v1/locate, fuzzed lease ids and clients on the lease routes. Every
 * answer is a clean 4xx (or the right bytes), never a 5xx with internals; nothing is fetched
 * from anywhere but the upstream.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { rangeConditions, rangeHeader } from "../common/byte-range-fuzz.js";
import { rawRequest, uncleanReply, wrongRangeReply } from "./http.js";
import { report, scale } from "./stack.js";

const data = randomBytes(300_000);
const BLOCK = 16 << 10;
/** What the Range fuzz reads: small, so a malformed header's answer (the whole object) is a short read. */
const FUZZED = "/v1/objects/r.bin";
const fuzzed = randomBytes(3 * BLOCK + 1000);
let rs: RangeServer;
let svc: CacheService;
let dir: string;
let bystander: Server;
let bystanderHits = 0;
let bystanderUrl: string;
let tried = 0;
const runs = scale(80, 600);

beforeAll(async () => {
  rs = await startRangeServer();
  rs.put("/v1/objects/h.bin", data);
  rs.put(FUZZED, fuzzed);
  // Somewhere the cache must never be talked into fetching from.
  bystander = createServer((_req, res) => {
    bystanderHits++;
    res.end("secret");
  });
  await new Promise<void>((r) => bystander.listen(0, "127.0.0.1", r));
  bystanderUrl = `http://127.0.0.1:${(bystander.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), "ec-rel-cache-hostile-"));
  svc = await startCache({
    upstreams: [rs.url],
    dir,
    maxBytes: 8 << 20,
    blockSize: BLOCK,
    logLevel: "silent",
    retries: 0,
  });
});

afterAll(async () => {
  await svc?.close();
  await rs?.close();
  await new Promise((r) => bystander?.close(r));
  await rm(dir, { recursive: true, force: true });
  report("cache-hostile", { requests: tried, bystander_hits: bystanderHits });
});

function fetchPath(target: string): string {
  return `/v1/fetch?url=${encodeURIComponent(target)}`;
}

async function req(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Awaited<ReturnType<typeof rawRequest>>> {
  tried++;
  return rawRequest(svc.url, method, path, headers, body);
}

describe("not an open proxy", () => {
  it("refuses every URL outside its upstream, however it is dressed up", async () => {
    const up = new URL(rs.url);
    const targets = [
      `${bystanderUrl}/v1/objects/h.bin`,
      `http://user:pass@${up.host}/v1/objects/h.bin`,
      `http://${up.host}@${new URL(bystanderUrl).host}/v1/objects/h.bin`,
      `https://${up.host}/v1/objects/h.bin`,
      `http://localhost:${up.port}/v1/objects/h.bin`,
      `http://[::1]:${up.port}/v1/objects/h.bin`,
      `http://${up.hostname}:${up.port}0/v1/objects/h.bin`,
      `${rs.url}.evil.example/v1/objects/h.bin`,
      `${rs.url}/v1/objects/%2e%2e/%2e%2e/x`,
      `${rs.url}/v1/objects/../../x`,
      `file:///etc/passwd`,
      `gopher://${up.host}/`,
      `data:text/plain,hello`,
      `//${new URL(bystanderUrl).host}/x`,
      `/v1/objects/h.bin`,
      ``,
    ];
    for (const t of targets) {
      const r = await req("GET", fetchPath(t), { range: "bytes=0-9" });
      expect(r.status, t).toBeGreaterThanOrEqual(400);
      expect(r.status, t).toBeLessThan(500);
      expect(uncleanReply(r), t).toBeUndefined();
    }
    expect(bystanderHits).toBe(0);
  });
});

describe("fuzzed requests get a clean 4xx or the right bytes", () => {
  it("Range, If-Range and If-Match headers on /v1/fetch", async () => {
    // Three blocks and a bit: the ranges cross the block boundaries the cache splits reads at.
    const target = fetchPath(`${rs.url}${FUZZED}`);
    const ranges = rangeHeader(fuzzed.length, [BLOCK, 2 * BLOCK, 3 * BLOCK]);
    await fc.assert(
      fc.asyncProperty(ranges, rangeConditions(rs.etag(FUZZED)!), async (range, cond) => {
        const headers = { range, ...cond };
        expect(wrongRangeReply(await req("GET", target, headers), fuzzed), JSON.stringify(headers)).toBeUndefined();
      }),
      { numRuns: runs },
    );
  });

  it("query strings on /v1/fetch and unknown routes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 60 }),
        fc.constantFrom("/v1/fetch", "/v1/stats", "/metrics", "/v1/plan", "/v1/nope", "/"),
        async (q, route) => {
          const path = `${route}?${encodeURI(q)}`;
          const reply = await req("GET", path);
          expect(uncleanReply(reply), path).toBeUndefined();
        },
      ),
      { numRuns: runs },
    );
    expect(bystanderHits).toBe(0);
  });

  it("JSON bodies on POST /v1/plan", async () => {
    const range = fc.record(
      {
        url: fc.oneof(fc.constant(`${rs.url}/v1/objects/h.bin`), fc.constant(`${bystanderUrl}/x`), fc.string()),
        offset: fc.oneof(fc.integer(), fc.double(), fc.string()),
        length: fc.oneof(fc.integer(), fc.constant(1e300), fc.string()),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.json({ maxDepth: 4 }),
      fc.string({ maxLength: 80 }),
      fc.array(range, { maxLength: 5 }).map((ranges) => JSON.stringify({ ranges })),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const reply = await req("POST", "/v1/plan", { "content-type": "application/json" }, b);
        expect(uncleanReply(reply), b).toBeUndefined();
      }),
      { numRuns: runs },
    );
    // A plan naming another host is refused, not prefetched.
    expect(bystanderHits).toBe(0);
  });

  /** What a hostile body puts where a locate or a plan takes a URL, an offset, a length. */
  // Built in each test: the servers' URLs are known only once beforeAll has run.
  const spanOf = () =>
    fc.record(
      {
        url: fc.oneof(
          fc.constant(`${rs.url}/v1/objects/h.bin`),
          fc.constant(`${rs.url}/v1/objects/h.bin?exp=1&sig=x`),
          fc.constant(`${bystanderUrl}/x`),
          fc.string(),
        ),
        object: fc.oneof(fc.string({ maxLength: 12 }), fc.integer()),
        etag: fc.oneof(fc.string({ maxLength: 20 }), fc.constant(`${rs.etag("/v1/objects/h.bin")}`)),
        offset: fc.oneof(fc.nat(400_000), fc.integer(), fc.double(), fc.constant(2 ** 53), fc.string()),
        length: fc.oneof(fc.nat(400_000), fc.constant(2 ** 40), fc.constant(1e300), fc.integer(), fc.string()),
        min: fc.oneof(fc.nat(400_000), fc.integer()),
      },
      { requiredKeys: [] },
    );
  const objectsOf = () =>
    fc.array(
      fc.record(
        {
          id: fc.oneof(fc.string({ maxLength: 12 }), fc.integer()),
          url: spanOf().map((s) => s.url),
          etag: fc.string(),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 3 },
    );

  it("JSON bodies on POST /v1/locate: single, batched, long-polled", async () => {
    const span = spanOf();
    const objects = objectsOf();
    const leaseIds = fc.array(fc.oneof(fc.string({ maxLength: 110 }), fc.uuid(), fc.integer()), { maxLength: 3 });
    const body = fc.oneof(
      fc.json({ maxDepth: 4 }),
      fc.string({ maxLength: 80 }),
      span.chain((s) =>
        fc
          .record({ leaseMs: fc.oneof(fc.integer(), fc.constant(2 ** 40)), release: leaseIds }, { requiredKeys: [] })
          .map((extra) => JSON.stringify({ ...s, ...extra })),
      ),
      fc
        .record(
          {
            spans: fc.array(span, { maxLength: 4 }),
            client: fc.oneof(fc.string({ maxLength: 300 }), fc.integer()),
            objects,
            waitMs: fc.oneof(fc.integer({ min: -5, max: 50 }), fc.constant(2 ** 40), fc.string()),
            leaseMs: fc.oneof(fc.integer(), fc.constant(2 ** 40)),
            release: leaseIds,
            form: fc.oneof(fc.constant("compact"), fc.string({ maxLength: 8 })),
          },
          { requiredKeys: ["spans"] },
        )
        .map((b) => JSON.stringify(b)),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const reply = await req("POST", "/v1/locate", { "content-type": "application/json" }, b);
        expect(uncleanReply(reply), b).toBeUndefined();
      }),
      { numRuns: runs },
    );
    expect(bystanderHits).toBe(0);
  });

  it("lease ids on DELETE /v1/lease/{id} and clients on DELETE /v1/leases", async () => {
    // A broken percent-encoding once threw out of decodeURIComponent: a 500.
    const broken = await req("DELETE", "/v1/lease/%E0%A4%A");
    expect(broken.status).toBe(400);
    expect(uncleanReply(broken)).toBeUndefined();
    const id = fc.oneof(
      fc.string({ maxLength: 120 }).map((s) => encodeURI(s)),
      fc.constantFrom("%", "%E0%A4%A", "%FF", "%00", "%C0%AF", "a/b", "..", "%2e%2e/x", ""),
      fc.uuid(),
    );
    await fc.assert(
      fc.asyncProperty(id, fc.string({ maxLength: 40 }), async (lease, client) => {
        const one = await req("DELETE", `/v1/lease/${lease}`);
        expect(uncleanReply(one), lease).toBeUndefined();
        const all = await req("DELETE", `/v1/leases?client=${encodeURIComponent(client)}`);
        expect(uncleanReply(all), client).toBeUndefined();
        const raw = await req("DELETE", `/v1/leases?${lease}`);
        expect(uncleanReply(raw), lease).toBeUndefined();
      }),
      { numRuns: runs },
    );
  });

  it("plans by object id, with their objects", async () => {
    const span = spanOf();
    const objects = objectsOf();
    const body = fc
      .record(
        {
          client: fc.oneof(fc.string({ maxLength: 300 }), fc.integer()),
          objects,
          ranges: fc.array(span, { maxLength: 5 }),
          budgetBytes: fc.oneof(fc.integer(), fc.constant(2 ** 60)),
        },
        { requiredKeys: ["ranges"] },
      )
      .map((b) => JSON.stringify(b));
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const reply = await req("POST", "/v1/plan", { "content-type": "application/json" }, b);
        expect(uncleanReply(reply), b).toBeUndefined();
      }),
      { numRuns: runs },
    );
    expect(bystanderHits).toBe(0);
  });
});
