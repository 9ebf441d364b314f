/**
 * Objects named by short ids on the cache's control API: the cache's bounded map and its typed
 * refusal of an unknown id, the client's registration and refresh, and a stream whose cache
 * restarts or drops ids going on, against a real origin-cache service over loopback.
 */
import { request, Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ObjectIds } from "../../origin-cache/core/object-ids.js";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import { remoteCache } from "../../sdk/source/cache-client.js";
import { LocalPlane } from "../../sdk/source/local-plane.js";
import { ObjectIdClient } from "../../sdk/source/object-ids.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { tcpRelay, type TcpRelay } from "../helpers/tcp-relay.js";
import { objectBytes, prng, tempDir, until } from "./fixtures.js";

const BLOCK = 64 << 10;
const objects = Array.from({ length: 4 }, (_, i) => ({
  path: `/v1/objects/ids${i}.mp4`,
  data: objectBytes(10 * BLOCK + 333 * i, `ids${i}`),
}));
/** As long as an edge's signed URLs with their expiry and signature. */
const SIG = "a".repeat(600);
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

/** A URL as the edge signs it, its `exp` some time ahead: `n` tells re-signed URLs apart. */
const signed = (path: string, n = 1): string => `${rs.url}${path}?exp=${9_999_999_990 + n}&sig=${SIG}`;

async function service(opts: { dir?: string; port?: number; objectIds?: number } = {}): Promise<CacheService> {
  let dir = opts.dir;
  if (!dir) {
    const d = await tempDir();
    cleanup.push(d.remove);
    dir = d.path;
  }
  const svc = await startCache({
    upstreams: [rs.url],
    dir,
    maxBytes: 64 << 20,
    blockSize: BLOCK,
    logLevel: "silent",
    ...(opts.port ? { listen: { port: opts.port } } : {}),
    ...(opts.objectIds ? { objectIds: opts.objectIds } : {}),
  });
  cleanup.push(() => svc.close());
  return svc;
}

async function post(svc: CacheService, path: string, body: object): Promise<{ status: number; json: unknown }> {
  const res = await request(`${svc.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text.startsWith("{") && !text.includes("\n{") ? JSON.parse(text) : text };
}

/** A window of `n` spans of the objects, each under a block long. */
function window(n: number, seed: number) {
  const rand = prng(seed);
  return Array.from({ length: n }, () => {
    const o = objects[Math.floor(rand() * objects.length)]!;
    const offset = Math.floor(rand() * (o.data.length - BLOCK));
    return {
      o,
      span: { url: signed(o.path), etag: rs.etag(o.path)!, offset, length: 1000 + Math.floor(rand() * 20_000) },
    };
  });
}

/** Plans the window on `plane` and reads every span of it, checking each byte. */
async function readWindow(plane: LocalPlane, spans: ReturnType<typeof window>): Promise<void> {
  plane.plan(spans.map((s) => ({ ...s.span, size: s.o.data.length })));
  for (const { o, span } of spans) {
    const bytes = await plane.read(span.url, span.offset, span.length, span.etag);
    expect(Buffer.from(bytes!).equals(o.data.subarray(span.offset, span.offset + span.length))).toBe(true);
  }
}

function planeOf(svc: CacheService): LocalPlane {
  const agent = new Agent();
  const plane = new LocalPlane(svc.url, agent);
  cleanup.push(
    () => agent.close(),
    () => plane.close(),
  );
  return plane;
}

/** A TCP relay in front of the cache that counts the bytes clients send it. */
async function countingRelay(target: CacheService): Promise<TcpRelay> {
  const relay = await tcpRelay(target.url);
  cleanup.push(() => relay.close());
  return relay;
}

type Range = { url: string; etag?: string; offset: number; length: number };

describe("the cache's object ids", () => {
  it("resolves a client's ids to the URL last registered, keeps the most recent `max`, and refuses an unknown one", () => {
    const ids = new ObjectIds(2);
    const a = { url: signed(objects[0]!.path), etag: '"a"' };
    expect(ids.resolve<Range>("c", [{ id: "0", ...a }], [{ object: "0", offset: 0, length: 1 }])).toEqual([
      { ...a, offset: 0, length: 1 },
    ]);
    // Re-signed: the same id, a new URL.
    const fresh = signed(objects[0]!.path, 2);
    expect(ids.resolve<Range>("c", [{ id: "0", url: fresh }], [{ object: "0", offset: 5, length: 1 }])).toEqual([
      { url: fresh, offset: 5, length: 1 },
    ]);
    // Ids are the client's own.
    expect(() => ids.resolve<Range>("d", undefined, [{ object: "0", offset: 0, length: 1 }])).toThrow(
      expect.objectContaining({ code: "ERR_OBJECT_ID_UNKNOWN", status: 404 }),
    );
    ids.resolve<Range>(
      "c",
      [
        { id: "1", url: "u1" },
        { id: "2", url: "u2" },
      ],
      [],
    );
    expect(ids.size).toBe(2);
    expect(() => ids.resolve<Range>("c", undefined, [{ object: "0", offset: 0, length: 1 }])).toThrow(
      expect.objectContaining({
        code: "ERR_OBJECT_ID_UNKNOWN",
        message: expect.stringMatching(/^Expected object ids/),
      }),
    );
    // A request's own registrations resolve even past the bound; URLs pass through as they are.
    const many = Array.from({ length: 5 }, (_, i) => ({ id: `m${i}`, url: `u${i}` }));
    expect(
      ids
        .resolve<{ url: string; offset: number; length: number }>("c", many, [
          ...many.map((m) => ({ object: m.id, offset: 0, length: 1 })),
          { url: "plain", offset: 0, length: 1 },
        ])
        .map((r) => r.url),
    ).toEqual(["u0", "u1", "u2", "u3", "u4", "plain"]);
  });

  it("answers a plan or batch that names an unknown id with ERR_OBJECT_ID_UNKNOWN, and one that registers it", async () => {
    const svc = await service();
    const o = objects[0]!;
    const range = { object: "7", offset: 0, length: 100 };
    for (const [path, body] of [
      ["/v1/plan", { client: "c", ranges: [range] }],
      ["/v1/locate", { client: "c", spans: [range] }],
    ] as const) {
      const r = await post(svc, path, body);
      expect(r.status).toBe(404);
      expect(r.json).toMatchObject({ error: { code: "ERR_OBJECT_ID_UNKNOWN" } });
    }
    const objs = [{ id: "7", url: signed(o.path), etag: rs.etag(o.path)! }];
    expect((await post(svc, "/v1/plan", { client: "c", objects: objs, ranges: [range] })).status).toBe(200);
    await until(() => svc.stats().blocks >= 1, "the plan prefetched");
    // Registered by the plan: the batch names it by id alone.
    const r = await post(svc, "/v1/locate", { client: "c", spans: [range] });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ spans: [{ etag: rs.etag(o.path), size: o.data.length }] });
  });
});

describe("the client's object ids", () => {
  it("registers each object until the cache acknowledged it at its URL, again once re-signed or forgotten", () => {
    const ids = new ObjectIdClient("c");
    const [a, b] = [signed(objects[0]!.path), signed(objects[1]!.path)];
    const first = ids.refer([{ url: a, etag: '"a"' }, { url: a, etag: '"a"' }, { url: b }]);
    expect(first.ids).toEqual(["0", "0", "1"]);
    expect(first.objects).toEqual([
      { id: "0", url: a, etag: '"a"' },
      { id: "1", url: b },
    ]);
    // Not acknowledged yet: registered again.
    expect(ids.refer([{ url: b }]).objects).toHaveLength(1);
    first.confirm();
    expect(ids.refer([{ url: a, etag: '"a"' }]).objects).toEqual([]);
    const resigned = signed(objects[0]!.path, 2);
    expect(ids.refer([{ url: resigned, etag: '"a"' }]).objects).toEqual([{ id: "0", url: resigned, etag: '"a"' }]);
    // Another version of the object is another object.
    expect(ids.refer([{ url: a, etag: '"a2"' }]).ids).toEqual(["2"]);
    ids.forget();
    expect(ids.refer([{ url: b }]).objects).toEqual([{ id: "1", url: b }]);
  });
});

describe("a stream over object ids", () => {
  it("sends a later window's plan and batch by id, not by signed URL", async () => {
    const svc = await service();
    const relay = await countingRelay(svc);
    const cache = await remoteCache(relay.url, 0, { local: true });
    cleanup.push(() => cache.close());
    const spans = window(32, 3);
    const plan = (part: typeof spans) => cache.plan(part.map((s) => ({ ...s.span, size: s.o.data.length })));
    const readAll = async (part: typeof spans) => {
      for (const { o, span } of part) {
        const bytes = await cache.read(span.url, span.offset, span.length, span.etag);
        expect(Buffer.from(bytes).equals(o.data.subarray(span.offset, span.offset + span.length))).toBe(true);
      }
    };
    plan(spans.slice(0, 16));
    await readAll(spans.slice(0, 16));
    await new Promise((r) => setTimeout(r, 200)); // the first window's plan and lease releases are sent
    const before = relay.sent();
    plan(spans.slice(16));
    await readAll(spans.slice(16));
    await new Promise((r) => setTimeout(r, 200));
    const window2 = relay.sent() - before;
    // 16 spans' signed URLs (~700 bytes each) in the plan and again in the batch: ~22 KiB by URL.
    expect(window2).toBeLessThan(6 * 1024);
  });

  it("registers a re-signed URL again under the object's id, and reads through it", async () => {
    const svc = await service();
    const relay = await countingRelay(svc);
    const agent = new Agent();
    const plane = new LocalPlane(relay.url, agent);
    cleanup.push(
      () => agent.close(),
      () => plane.close(),
    );
    const o = objects[2]!;
    const at = (exp: number, offset: number) => ({
      url: signed(o.path, exp),
      etag: rs.etag(o.path)!,
      offset,
      length: 5000,
    });
    for (const [exp, offset] of [
      [1, 0],
      [1, 9000],
      [2, 20_000],
    ] as const) {
      const span = at(exp, offset);
      plane.plan([{ ...span, size: o.data.length }]);
      const bytes = await plane.read(span.url, span.offset, span.length, span.etag);
      expect(Buffer.from(bytes!).equals(o.data.subarray(offset, offset + 5000))).toBe(true);
    }
    // Each POST /v1/locate's body, by its content-length.
    const text = relay.text();
    const bodies = [...text.matchAll(/POST \/v1\/locate HTTP\/1\.1\r\n([\s\S]*?)\r\n\r\n/g)].map((m) => {
      const length = Number(/content-length: *(\d+)/i.exec(m[1]!)![1]);
      const from = m.index + m[0].length;
      return text.slice(from, from + length);
    });
    const batches = bodies.map((b) => JSON.parse(b) as { objects?: { id: string; url: string }[] });
    expect(batches.map((b) => b.objects?.map((x) => x.url.match(/exp=\d+(\d)\b/)![1]))).toEqual([
      ["1"],
      undefined,
      ["2"],
    ]);
    expect(new Set(batches.flatMap((b) => b.objects?.map((x) => x.id) ?? []))).toEqual(new Set(["0"]));
    expect(plane.fallbacks).toBe(0);
  });

  it("goes on when the cache restarts and forgets every id", async () => {
    const d = await tempDir();
    cleanup.push(d.remove);
    const first = await service({ dir: d.path });
    const port = Number(new URL(first.url).port);
    const plane = planeOf(first);
    await readWindow(plane, window(16, 7));
    await first.close();
    const second = await service({ dir: d.path, port });
    await readWindow(plane, window(16, 8));
    expect(plane.fallbacks).toBe(0);
    expect(plane.hits).toBe(32);
    expect(second.stats().locates).toBeGreaterThanOrEqual(1);
  });

  it("goes on when the cache keeps fewer ids than the stream names", async () => {
    const svc = await service({ objectIds: 2 });
    const plane = planeOf(svc);
    for (let w = 0; w < 4; w++) await readWindow(plane, window(12, 20 + w));
    expect(plane.fallbacks).toBe(0);
    expect(plane.hits).toBe(48);
  });
});
