/**
 * No request, however crafted, makes the cache do unbounded work or hold unbounded memory: a plan
 * is clamped to its object's size and capped in blocks and clients, a locate span is bounded, and
 * leases are capped per client and in all, well below the store, so that eviction has room.
 */
import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CacheStats, PlanAck, startCache, type CacheService } from "../../origin-cache/index.js";
import { PLAN_CLIENT_BLOCKS, PLAN_MAX_CLIENTS } from "../../origin-cache/prefetch/planner.js";
import { slotBytesFor } from "../../origin-cache/store/slot.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { objectBytes, tempDir } from "./fixtures.js";

const BLOCK = 16 << 10;
const SLOT = slotBytesFor(BLOCK);
const objects = Array.from({ length: 3 }, (_, i) => ({
  path: `/v1/objects/bounds${i}.bin`,
  data: objectBytes(10 * BLOCK + 100 * i, `bounds${i}`),
}));
let rs: RangeServer;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  rs = await startRangeServer();
  for (const o of objects) rs.put(o.path, o.data);
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
afterAll(() => rs.close());

const signed = (path: string): string => `${rs.url}${path}?exp=9999999999&sig=x`;

async function service(maxBytes: number): Promise<CacheService> {
  const d = await tempDir();
  const svc = await startCache({ upstreams: [rs.url], dir: d.path, maxBytes, blockSize: BLOCK, logLevel: "silent" });
  cleanup.push(d.remove, () => svc.close());
  return svc;
}

async function post(svc: CacheService, path: string, body: object): Promise<{ status: number; json: unknown }> {
  const res = await request(`${svc.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

async function stats(svc: CacheService): Promise<CacheStats> {
  return CacheStats.parse(await (await request(`${svc.url}/v1/stats`)).body.json());
}

async function get(svc: CacheService, path: string, offset: number, length: number): Promise<Buffer> {
  const res = await request(`${svc.url}/v1/fetch?url=${encodeURIComponent(signed(path))}`, {
    headers: { range: `bytes=${offset}-${offset + length - 1}` },
  });
  expect(res.statusCode).toBe(206);
  return Buffer.from(await res.body.arrayBuffer());
}

describe("POST /v1/plan is bounded whatever it asks", () => {
  it("clamps a range to its object's size, caps the blocks of a plan and the clients with one", async () => {
    const svc = await service(64 << 20);
    const o = objects[0]!;
    await get(svc, o.path, 0, 10);
    // 2^34 bytes were 2^20 planned blocks, made in one turn of the event loop.
    const clamped = await post(svc, "/v1/plan", {
      client: "a",
      ranges: [{ url: signed(o.path), offset: 0, length: 2 ** 34 }],
    });
    expect(clamped.status).toBe(200);
    expect(PlanAck.parse(clamped.json).blocks).toBe(Math.ceil(o.data.length / BLOCK));
    const past = await post(svc, "/v1/plan", {
      client: "a",
      ranges: [{ url: signed(o.path), offset: 2 ** 40, length: 10 }],
    });
    expect(PlanAck.parse(past.json).blocks).toBe(0);

    // An object not pinned yet: its size is unknown, so the plan's own cap bounds it.
    const huge = await post(svc, "/v1/plan", {
      client: "b",
      ranges: [
        { url: signed(objects[1]!.path), offset: 0, length: 2 ** 40 },
        { url: signed(objects[1]!.path), offset: 0, length: 2 ** 40 },
      ],
    });
    expect(huge.status).toBe(200);
    expect(PlanAck.parse(huge.json).blocks).toBeLessThanOrEqual(PLAN_CLIENT_BLOCKS);
    expect((await stats(svc)).plan.plannedBlocks).toBeLessThanOrEqual(PLAN_CLIENT_BLOCKS + 10);

    // One more client than the cache keeps plans for is refused, typed; the others keep theirs.
    const range = { url: signed(o.path), offset: 0, length: BLOCK };
    for (let c = (await stats(svc)).plan.clients; c < PLAN_MAX_CLIENTS; c++)
      expect((await post(svc, "/v1/plan", { client: `c${c}`, ranges: [range] })).status).toBe(200);
    const refused = await post(svc, "/v1/plan", { client: "one-too-many", ranges: [range] });
    expect(refused).toMatchObject({ status: 429, json: { error: { code: "ERR_PLAN_LIMIT" } } });
    expect((await post(svc, "/v1/plan", { client: "b", ranges: [range] })).status).toBe(200);
    expect((await stats(svc)).plan.clients).toBe(PLAN_MAX_CLIENTS);
  });
});

describe("leases are capped per client and in all", () => {
  it("refuses a lease past a cap with ERR_LEASE_LIMIT, and eviction keeps its room", async () => {
    // 16 slots: leases may hold 8 of them in all, 4 for one client.
    const svc = await service(16 * SLOT);
    const [a, b, c] = objects as [(typeof objects)[0], (typeof objects)[0], (typeof objects)[0]];
    const first = await post(svc, "/v1/locate", { url: signed(a.path), offset: 0, length: 4 * BLOCK });
    expect(first.status).toBe(200);
    const more = await post(svc, "/v1/locate", { url: signed(a.path), offset: 4 * BLOCK, length: 10 });
    expect(more).toMatchObject({ status: 429, json: { error: { code: "ERR_LEASE_LIMIT" } } });
    const batch = (client: string, o: typeof a, blocks: number) =>
      post(svc, "/v1/locate", {
        client,
        spans: [{ url: signed(o.path), offset: 0, length: blocks * BLOCK }],
        waitMs: 5000,
      });
    expect((await batch("b", b, 4)).status).toBe(200);
    expect((await stats(svc)).leasedBlocks).toBe(8);
    // Every cap reached: the long-polled span comes back null with the typed error.
    const over = await batch("c", c, 1);
    expect(over.status).toBe(200);
    expect(over.json).toMatchObject({ at: [0], spans: [null], error: { code: "ERR_LEASE_LIMIT" } });
    expect((await stats(svc)).leases).toBe(2);
    // The unleased half of the store still turns over: every object reads exactly.
    for (const o of objects)
      for (let off = 0; off < o.data.length; off += 3 * BLOCK) {
        const n = Math.min(3 * BLOCK, o.data.length - off);
        expect((await get(svc, o.path, off, n)).equals(o.data.subarray(off, off + n))).toBe(true);
      }
    expect((await stats(svc)).evictions).toBeGreaterThan(0);
  });
});
