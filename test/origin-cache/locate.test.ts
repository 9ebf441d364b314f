/**
 * The local data plane against a real origin-cache service over loopback HTTP: POST /v1/locate
 * and its leases, and the SDK's client that preads the slabs itself.
 */
import { spawn } from "node:child_process";
import { chmod, mkdtemp, open, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { build } from "esbuild";
import { Agent, request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Socket } from "node:net";
import {
  LOCATE_LINES_TYPE,
  LocateBatchLine,
  LocateBatchResponse,
  LocateCompactLine,
  LocateCompactResponse,
  LocateResponse,
  startCache,
  type CacheService,
} from "../../origin-cache/index.js";
import { slotBytesFor } from "../../origin-cache/store/slot.js";
import { remoteCache } from "../../sdk/source/cache-client.js";
import { LocalPlane, wantsLocalPlane } from "../../sdk/source/local-plane.js";
import { ReadPool, releaseRead } from "../../common/read-pool.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { tcpRelay } from "../helpers/tcp-relay.js";
import { dirBytes, objectBytes, prng, tempDir, until } from "./fixtures.js";

const BLOCK = 64 << 10;
const SLOT = slotBytesFor(BLOCK);
const objects = Array.from({ length: 4 }, (_, i) => ({
  path: `/v1/objects/loc${i}.mp4`,
  data: objectBytes(12 * BLOCK + 777 * i, `loc${i}`),
}));
let rs: RangeServer;
let buildDir: string;
let childJs: string;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  rs = await startRangeServer();
  for (const o of objects) rs.put(o.path, o.data);
  buildDir = await mkdtemp(join(tmpdir(), "ec-locate-build-"));
  childJs = join(buildDir, "child.cjs");
  await build({
    entryPoints: [join(import.meta.dirname, "locate-child.ts")],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: childJs,
    logLevel: "silent",
  });
});
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});
afterAll(async () => {
  await rs.close();
  await rm(buildDir, { recursive: true, force: true });
});

const signed = (path: string): string => `${rs.url}${path}?exp=9999999999&sig=x`;

/**
 * A cache service of `maxBytes`. A store of a few slots, as some tests use to fill it with
 * leases, lets leases hold all of it; the caps on leases have tests of their own.
 */
async function service(maxBytes?: number): Promise<{ svc: CacheService; dir: string }> {
  const d = await tempDir();
  const svc = await startCache({
    upstreams: [rs.url],
    dir: d.path,
    maxBytes: maxBytes ?? 64 << 20,
    blockSize: BLOCK,
    logLevel: "silent",
    ...(maxBytes === undefined ? {} : { leaseBytes: maxBytes, clientLeaseBytes: maxBytes }),
  });
  cleanup.push(d.remove, () => svc.close());
  return { svc, dir: d.path };
}

async function locate(svc: CacheService, body: object): Promise<{ status: number; json: unknown }> {
  const res = await request(`${svc.url}/v1/locate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, json: await res.body.json() };
}

/** A long-polled batched locate's answer, line by line. */
async function locateLines(svc: CacheService, body: object): Promise<{ type: string; lines: LocateBatchLine[] }> {
  const res = await request(`${svc.url}/v1/locate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.statusCode).toBe(200);
  const text = await res.body.text();
  expect(text.endsWith("\n")).toBe(true);
  return {
    type: String(res.headers["content-type"]),
    lines: text
      .trim()
      .split("\n")
      .map((l) => LocateBatchLine.parse(JSON.parse(l))),
  };
}

async function get(svc: CacheService, path: string, offset: number, length: number): Promise<Buffer> {
  const res = await request(`${svc.url}/v1/fetch?url=${encodeURIComponent(signed(path))}`, {
    headers: { range: `bytes=${offset}-${offset + length - 1}` },
  });
  expect(res.statusCode).toBe(206);
  return Buffer.from(await res.body.arrayBuffer());
}

/** The SDK's local plane over `svc` (reading into `pool`, else its own), closed after the test unless `keep`. */
function planeOf(svc: CacheService, keep = false, pool?: ReadPool): LocalPlane {
  const agent = new Agent();
  cleanup.push(() => agent.close());
  const plane = new LocalPlane(svc.url, agent, pool);
  if (!keep) cleanup.push(() => plane.close());
  return plane;
}

/** A random span of one of the objects, up to three blocks long. */
function randomSpan(rand: () => number) {
  const o = objects[Math.floor(rand() * objects.length)]!;
  const offset = Math.floor(rand() * (o.data.length - 1));
  const length = 1 + Math.floor(rand() * Math.min(o.data.length - offset - 1, 3 * BLOCK));
  return { o, span: { url: signed(o.path), etag: rs.etag(o.path), offset, length } };
}

/** The runs' bytes, read from the slabs as a client on this host would. */
async function readRuns(located: LocateResponse): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const run of located.runs) {
    const fh = await open(run.path, "r");
    const buf = Buffer.alloc(run.length);
    await fh.read(buf, 0, run.length, run.offset);
    await fh.close();
    parts.push(buf);
  }
  return Buffer.concat(parts);
}

function child(args: object): {
  lines: AsyncIterableIterator<string>;
  exited: Promise<NodeJS.Signals | null>;
  kill: () => void;
} {
  const c = spawn(process.execPath, [childJs], {
    env: { ...process.env, EC_LOCATE_CHILD: JSON.stringify(args) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => c.once("exit", (_code, signal) => resolve(signal)));
  return {
    lines: createInterface({ input: c.stdout })[Symbol.asyncIterator](),
    exited,
    kill: () => void c.kill("SIGKILL"),
  };
}

describe("POST /v1/locate", () => {
  it("names runs of the slab files that hold exactly the span's bytes, pulling what is missing first", async () => {
    const { svc } = await service();
    const o = objects[1]!;
    const r = await locate(svc, {
      url: signed(o.path),
      etag: rs.etag(o.path),
      offset: BLOCK - 10,
      length: 3 * BLOCK + 20,
    });
    expect(r.status).toBe(200);
    const located = LocateResponse.parse(r.json);
    expect(located.etag).toBe(rs.etag(o.path));
    expect(located.size).toBe(o.data.length);
    expect(located.runs).toHaveLength(5); // blocks 1..4, headers between each slot's data
    expect(located.lease.expiresAt).toBeGreaterThan(Date.now());
    expect((await readRuns(located)).equals(o.data.subarray(BLOCK - 10, 4 * BLOCK + 10))).toBe(true);
    expect(svc.stats().leases).toBe(1);
    const del = await request(`${svc.url}/v1/lease/${located.lease.id}`, { method: "DELETE" });
    expect(del.statusCode).toBe(204);
    await del.body.dump();
    expect(svc.stats().leases).toBe(0);
    const again = await request(`${svc.url}/v1/lease/${located.lease.id}`, { method: "DELETE" });
    expect(again.statusCode).toBe(404);
    expect(await again.body.json()).toMatchObject({ error: { code: "ERR_LEASE_NOT_FOUND" } });
  });

  it("rejects bad requests with typed errors: shape, range, version", async () => {
    const { svc } = await service();
    const o = objects[0]!;
    const bad = await locate(svc, { url: signed(o.path), offset: -1, length: 5 });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: { code: "ERR_INVALID_ARGUMENT" } });
    expect((bad.json as { error: { message: string } }).error.message).toMatch(/^Expected a locate request/);
    const past = await locate(svc, { url: signed(o.path), offset: o.data.length, length: 1 });
    expect(past).toMatchObject({ status: 416, json: { error: { code: "ERR_RANGE_NOT_SATISFIABLE" } } });
    const changed = await locate(svc, { url: signed(o.path), etag: '"another"', offset: 0, length: 1 });
    expect(changed).toMatchObject({ status: 412, json: { error: { code: "ERR_ETAG_CHANGED" } } });
    expect(svc.stats().leases).toBe(0);
  });

  it("keeps leased slots from eviction under pressure, and lets them go once released", async () => {
    const max = 6 * SLOT;
    const { svc, dir } = await service(max);
    const held = objects[0]!;
    const located = LocateResponse.parse(
      (await locate(svc, { url: signed(held.path), offset: 0, length: 2 * BLOCK })).json,
    );
    // Everything else the cache reads now must fit in the slots the lease leaves.
    for (const o of objects.slice(1))
      for (let b = 0; b < 12; b++)
        expect((await get(svc, o.path, b * BLOCK, BLOCK)).equals(o.data.subarray(b * BLOCK, (b + 1) * BLOCK))).toBe(
          true,
        );
    expect(svc.stats().evictions).toBeGreaterThan(10);
    expect(await dirBytes(dir)).toBeLessThanOrEqual(max);
    expect((await readRuns(located)).equals(held.data.subarray(0, 2 * BLOCK))).toBe(true);
    svc.cache.release(located.lease.id);
    for (const o of objects.slice(1)) await get(svc, o.path, 0, 12 * BLOCK);
    const requests = rs.requests(held.path);
    expect((await get(svc, held.path, 0, 2 * BLOCK)).equals(held.data.subarray(0, 2 * BLOCK))).toBe(true);
    expect(rs.requests(held.path)).toBeGreaterThan(requests); // evicted after the release, pulled again
  });

  it("answers ERR_LOCATE_UNAVAILABLE when leases hold every slot, and GET still serves", async () => {
    const { svc } = await service(2 * SLOT);
    const a = objects[0]!;
    const first = await locate(svc, { url: signed(a.path), offset: 0, length: 2 * BLOCK });
    expect(first.status).toBe(200);
    const b = objects[1]!;
    const second = await locate(svc, { url: signed(b.path), offset: 0, length: BLOCK });
    expect(second).toMatchObject({ status: 503, json: { error: { code: "ERR_LOCATE_UNAVAILABLE" } } });
    expect((await get(svc, b.path, 0, BLOCK)).equals(b.data.subarray(0, BLOCK))).toBe(true);
  });

  it("releases an expired lease by itself", async () => {
    const { svc } = await service(4 * SLOT);
    const o = objects[2]!;
    const located = LocateResponse.parse(
      (await locate(svc, { url: signed(o.path), offset: 0, length: 4 * BLOCK, leaseMs: 300 })).json,
    );
    expect(located.lease.expiresAt - Date.now()).toBeLessThanOrEqual(300);
    expect(svc.stats().leases).toBe(1);
    // While held, the store is all leased: nothing else can be stored.
    expect((await locate(svc, { url: signed(objects[3]!.path), offset: 0, length: 1 })).status).toBe(503);
    await until(() => svc.stats().leases === 0, "the lease to expire", 5000);
    expect((await locate(svc, { url: signed(objects[3]!.path), offset: 0, length: 1 })).status).toBe(200);
    const del = await request(`${svc.url}/v1/lease/${located.lease.id}`, { method: "DELETE" });
    expect(del.statusCode).toBe(404);
    await del.body.dump();
  });

  it("lets a killed client's lease expire", async () => {
    const { svc } = await service();
    const o = objects[3]!;
    const c = child({ mode: "hold", cache: svc.url, url: signed(o.path), offset: 0, length: 3 * BLOCK, leaseMs: 500 });
    const line = await c.lines.next();
    expect(JSON.parse(line.value as string)).toHaveProperty("lease");
    expect(svc.stats().leases).toBe(1);
    c.kill();
    expect(await c.exited).toBe("SIGKILL");
    expect(svc.stats().leases).toBe(1);
    await until(() => svc.stats().leases === 0, "the killed client's lease to expire", 5000);
  });
});

describe("long-polled batched locates", () => {
  it("answers the stored spans at once, then each other one once pulled and stored, or with the error that stopped it", async () => {
    const { svc } = await service();
    const [a, b] = [objects[0]!, objects[1]!];
    await get(svc, a.path, 0, 2 * BLOCK);
    await until(() => svc.stats().blocks === 2, "2 blocks stored");
    const spans = [
      { url: signed(a.path), etag: rs.etag(a.path), offset: 10, length: BLOCK },
      { url: signed(b.path), offset: BLOCK + 5, length: 2 * BLOCK },
      { url: signed(a.path), etag: '"another"', offset: 0, length: 10 },
      // Only `min` is pulled; the rest is located as far as it is stored.
      { url: signed(b.path), offset: 6 * BLOCK, length: 3 * BLOCK, min: BLOCK },
    ];
    const { type, lines } = await locateLines(svc, { spans, waitMs: 10_000 });
    expect(type).toBe(LOCATE_LINES_TYPE);
    expect(lines[0]).toMatchObject({ at: [0] });
    expect(lines.flatMap((l) => l.at).sort()).toEqual([0, 1, 2, 3]);
    const byIndex = new Map(lines.flatMap((l) => l.at.map((i, k) => [i, { line: l, span: l.spans[k] }] as const)));
    for (const i of [0, 1, 3]) {
      const { line, span } = byIndex.get(i)!;
      const want = spans[i]!;
      const got = await readRuns({ ...span!, lease: line.lease! });
      expect(got.length).toBeGreaterThanOrEqual(want.min ?? want.length);
      const o = want.url === signed(a.path) ? a : b;
      expect(got.equals(o.data.subarray(want.offset, want.offset + got.length))).toBe(true);
    }
    expect(byIndex.get(3)!.span!.runs.reduce((n, r) => n + r.length, 0)).toBeLessThan(3 * BLOCK);
    expect(byIndex.get(2)!.span).toBeNull();
    expect(byIndex.get(2)!.line.error?.code).toBe("ERR_ETAG_CHANGED");
    expect(svc.stats().leases).toBe(3); // the stored spans' one, and each pulled span's own
    expect(svc.stats().locates).toBe(1);
  });

  it("names each slab file once per answer in the compact form, runs by number", async () => {
    const { svc } = await service();
    for (const o of objects) await get(svc, o.path, 0, o.data.length);
    await until(
      () => svc.stats().blocks === objects.reduce((n, o) => n + Math.ceil(o.data.length / BLOCK), 0),
      "stored",
    );
    // Many spans, each of several blocks: runs of few slab files.
    const rand = prng(41);
    const spans = Array.from({ length: 64 }, () => randomSpan(rand).span);
    const res = await request(`${svc.url}/v1/locate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ spans, waitMs: 5000, form: "compact" }),
    });
    expect(res.statusCode).toBe(200);
    const text = await res.body.text();
    const lines = text
      .trim()
      .split("\n")
      .map((l) => LocateCompactLine.parse(JSON.parse(l)));
    expect(lines).toHaveLength(1); // every span stored: one line under one lease
    const [line] = lines as [LocateCompactLine];
    const paths = new Set(line.paths);
    expect(paths.size).toBe(line.paths.length);
    for (const p of paths) expect(text.split(JSON.stringify(p)).length - 1).toBe(1);
    // Decoded, the runs are those of the object form, byte for byte the spans.
    const full = await locate(svc, { spans });
    const objectForm = LocateBatchResponse.parse(full.json);
    svc.cache.release(objectForm.lease!.id);
    for (const [k, i] of line.at.entries()) {
      const s = line.spans[k]!;
      const runs = Array.from({ length: s.runs.length / 3 }, (_, r) => ({
        path: line.paths[s.runs[3 * r]!]!,
        offset: s.runs[3 * r + 1]!,
        length: s.runs[3 * r + 2]!,
      }));
      expect(runs).toEqual(objectForm.spans[i]!.runs);
      const want = spans[i]!;
      const o = objects.find((x) => signed(x.path) === want.url)!;
      const got = await readRuns({ etag: s.etag, size: s.size, runs, lease: line.lease! });
      expect(got.equals(o.data.subarray(want.offset, want.offset + want.length))).toBe(true);
    }
    // The immediate (not long-polled) batch answers in the same form.
    const now = await locate(svc, { spans: spans.slice(0, 4), form: "compact" });
    const compact = LocateCompactResponse.parse(now.json);
    expect(compact.spans.every((s) => s !== null)).toBe(true);
    svc.cache.release(line.lease!.id);
    svc.cache.release(compact.lease!.id);
  });

  it("checks leaseMs of every locate kind, and grants the lease asked for to stored and pulled spans alike", async () => {
    const { svc } = await service();
    const [a, b] = [objects[0]!, objects[1]!];
    const span = { url: signed(a.path), offset: 0, length: 10 };
    const bad = { code: "ERR_INVALID_ARGUMENT", message: expect.stringMatching(/^Expected leaseMs from 1 to/) };
    await expect(svc.cache.locate(span.url, 0, 10, { leaseMs: 0 })).rejects.toMatchObject(bad);
    await expect(svc.cache.locateCached([span], { leaseMs: 1.5 })).rejects.toMatchObject(bad);
    await expect(svc.cache.locateLines([span], { waitMs: 100, leaseMs: 10 ** 9 }, () => {})).rejects.toMatchObject(bad);
    await get(svc, a.path, 0, BLOCK);
    await until(() => svc.stats().blocks === 1, "1 block stored");
    const lines: LocateBatchLine[] = [];
    const before = Date.now();
    await svc.cache.locateLines(
      [span, { url: signed(b.path), offset: 0, length: 10 }],
      { waitMs: 10_000, leaseMs: 90_000 },
      (l) => lines.push(l),
    );
    expect(lines).toHaveLength(2); // the stored span now, the other once pulled
    for (const l of lines) {
      expect(l.lease!.expiresAt).toBeGreaterThanOrEqual(before + 90_000);
      expect(l.lease!.expiresAt).toBeLessThan(Date.now() + 91_000);
      svc.cache.release(l.lease!.id);
    }
  });

  it("answers null for the spans not stored when its wait passes", async () => {
    // An upstream that takes connections and never answers.
    const sockets = new Set<Socket>();
    const stall = createServer((s) => void sockets.add(s));
    await new Promise<void>((r) => stall.listen(0, "127.0.0.1", r));
    const stallUrl = `http://127.0.0.1:${(stall.address() as { port: number }).port}`;
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          stall.close(() => r());
        }),
    );
    const d = await tempDir();
    const svc = await startCache({
      upstreams: [stallUrl],
      dir: d.path,
      maxBytes: 4 << 20,
      blockSize: BLOCK,
      logLevel: "silent",
    });
    cleanup.push(d.remove, () => svc.close());
    const { lines } = await locateLines(svc, {
      spans: [{ url: `${stallUrl}/v1/objects/x.mp4?exp=9999999999&sig=x`, offset: 0, length: 10 }],
      waitMs: 200,
    });
    expect(lines).toEqual([{ at: [0], spans: [null] }]);
    expect(svc.stats().leases).toBe(0);
  });
});

describe("the SDK's cache client on the same host", () => {
  it("reads random spans from the slabs, byte for byte what GET answers", async () => {
    const { svc } = await service();
    const plane = planeOf(svc);
    const cache = await remoteCache(svc.url);
    cleanup.push(() => cache.close());
    const rand = prng(17);
    for (let i = 0; i < 40; i++) {
      const {
        o,
        span: { offset, length, etag },
      } = randomSpan(rand);
      const local = await plane.read(signed(o.path), offset, length, etag);
      expect(local).toBeDefined();
      const want = o.data.subarray(offset, offset + length);
      expect(Buffer.from(local!).equals(want)).toBe(true);
      expect((await get(svc, o.path, offset, length)).equals(want)).toBe(true);
      expect(Buffer.from(await cache.read(signed(o.path), offset, length, etag)).equals(want)).toBe(true);
    }
    expect(plane.hits).toBe(40);
    expect(plane.fallbacks).toBe(0);
    await until(() => svc.stats().leases === 0, "every lease released");
  });

  it("reads spans into pooled memory that serves the next read once handed back", async () => {
    const { svc } = await service();
    const plane = planeOf(svc, false, new ReadPool(4 << 20, { poison: true }));
    const rand = prng(23);
    for (let i = 0; i < 20; i++) {
      const {
        o,
        span: { offset, length, etag },
      } = randomSpan(rand);
      const local = await plane.read(signed(o.path), offset, length, etag);
      expect(Buffer.from(local!).equals(o.data.subarray(offset, offset + length))).toBe(true);
      releaseRead(local);
    }
    // Spans up to three blocks: at most the 256 KiB class and the two below it are ever made.
    expect(plane.pool.stats().allocations).toBeLessThanOrEqual(3);
    expect(plane.pool.stats().reuses).toBeGreaterThanOrEqual(17);
  });

  it("releases each lease with its next locate, or by DELETE when none follows", async () => {
    const { svc } = await service();
    const plane = planeOf(svc);
    const o = objects[1]!;
    for (let i = 0; i < 5; i++) {
      expect(
        Buffer.from((await plane.read(signed(o.path), i * 1000, 5000, undefined))!).equals(
          o.data.subarray(i * 1000, i * 1000 + 5000),
        ),
      ).toBe(true);
      expect(svc.stats().leases).toBe(1); // the previous read's lease went with this locate
    }
    await until(() => svc.stats().leases === 0, "the last lease DELETEd", 5000);
  });

  it("falls back to GET when the locate fails, with the cache's typed error where GET has one too", async () => {
    const { svc } = await service(2 * SLOT);
    const plane = planeOf(svc, true);
    const a = objects[0]!;
    const hold = LocateResponse.parse((await locate(svc, { url: signed(a.path), offset: 0, length: 2 * BLOCK })).json);
    const b = objects[1]!;
    expect(await plane.read(signed(b.path), 0, 100, undefined)).toBeUndefined(); // every slot leased: 503
    expect(plane.fallbacks).toBe(1);
    expect(plane.enabled).toBe(true);
    const cache = await remoteCache(svc.url);
    cleanup.push(() => cache.close());
    expect(Buffer.from(await cache.read(signed(b.path), 0, 100, undefined)).equals(b.data.subarray(0, 100))).toBe(true);
    await expect(cache.read(signed(b.path), 0, 100, '"another"')).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
    svc.cache.release(hold.lease.id);
    await plane.close();
  });

  it("falls back to GET for good when the slab directory is unreadable to the client", async () => {
    const { svc, dir } = await service();
    const o = objects[2]!;
    await get(svc, o.path, 0, 2 * BLOCK);
    await until(() => svc.stats().blocks === 2, "both blocks stored (the cache holds its slab open from then on)");
    const slabs = join(dir, "slabs");
    // Closed to this process: by its mode, or for root (which reads any mode) by not being where
    // the cache names it, as for a cache in another mount namespace.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) await rename(slabs, `${slabs}.elsewhere`);
    else await chmod(slabs, 0o000);
    cleanup.push(() => (asRoot ? rename(`${slabs}.elsewhere`, slabs) : chmod(slabs, 0o755)));
    const plane = planeOf(svc);
    expect(await plane.read(signed(o.path), 1000, BLOCK, undefined)).toBeUndefined();
    expect(plane.enabled).toBe(false);
    expect(plane.fallbacks).toBe(1);
    const cache = await remoteCache(svc.url);
    cleanup.push(() => cache.close());
    expect(
      Buffer.from(await cache.read(signed(o.path), 1000, BLOCK, undefined)).equals(o.data.subarray(1000, 1000 + BLOCK)),
    ).toBe(true);
    await until(() => svc.stats().leases === 0, "the leases released");
  });

  it("uses the local plane only for a loopback cache, unless turned off", () => {
    expect(wantsLocalPlane("http://127.0.0.1:7070", undefined)).toBe(true);
    expect(wantsLocalPlane("http://localhost:7070", undefined)).toBe(true);
    expect(wantsLocalPlane("http://[::1]:7070", undefined)).toBe(true);
    expect(wantsLocalPlane("http://cache.internal:7070", undefined)).toBe(false);
    expect(wantsLocalPlane("http://cache.internal:7070", true)).toBe(false);
    expect(wantsLocalPlane("http://127.0.0.1:7070", false)).toBe(false);
    // EC_CACHE_LOCAL=0 reaches the plane as cacheLocal: false (test/sdk/options.test.ts).
  });
});

describe("batched locates of a plan window", () => {
  const ALL_BLOCKS = objects.reduce((n, o) => n + Math.ceil(o.data.length / BLOCK), 0);
  /** A batched locate answers what is stored, not what is still being written. */
  const stored = (svc: CacheService, blocks: number) =>
    until(() => svc.stats().blocks === blocks, `${blocks} blocks stored`);

  function window(n: number, seed: number) {
    const rand = prng(seed);
    return Array.from({ length: n }, () => randomSpan(rand));
  }

  it("answers the stored spans of one request under one lease, and null for the rest without pulling", async () => {
    const { svc } = await service();
    const [a, b] = [objects[0]!, objects[1]!];
    await get(svc, a.path, 0, 4 * BLOCK);
    await stored(svc, 4);
    const upstream = svc.stats().bytesFromUpstream;
    const r = await locate(svc, {
      spans: [
        { url: signed(a.path), etag: rs.etag(a.path), offset: 10, length: 3 * BLOCK },
        { url: signed(b.path), offset: 0, length: 100 }, // never read: not pinned, not stored
        { url: signed(a.path), offset: 3 * BLOCK, length: 2 * BLOCK }, // block 4 not stored
        { url: signed(a.path), etag: '"another"', offset: 0, length: 10 }, // another version
        { url: signed(a.path), offset: a.data.length, length: 10 }, // past the end
      ],
    });
    expect(r.status).toBe(200);
    const res = LocateBatchResponse.parse(r.json);
    expect(res.spans.map((s) => s !== null)).toEqual([true, false, false, false, false]);
    expect((await readRuns({ ...res.spans[0]!, lease: res.lease! })).equals(a.data.subarray(10, 10 + 3 * BLOCK))).toBe(
      true,
    );
    expect(svc.stats().bytesFromUpstream).toBe(upstream);
    expect(svc.stats().leases).toBe(1);
    svc.cache.release(res.lease!.id);
    expect(svc.stats().leases).toBe(0);

    const none = LocateBatchResponse.parse(
      (await locate(svc, { spans: [{ url: signed(b.path), offset: 0, length: 1 }] })).json,
    );
    expect(none).toEqual({ spans: [null] });
    const bad = await locate(svc, { spans: [] });
    expect(bad.status).toBe(400);
    expect((bad.json as { error: { message: string } }).error.message).toMatch(/^Expected a batched locate request/);
  });

  it("reads a warm window, any part of its spans and a little past them, with one locate per batch", async () => {
    const { svc } = await service();
    for (const o of objects) await get(svc, o.path, 0, o.data.length);
    await stored(svc, ALL_BLOCKS);
    const plane = planeOf(svc, true);
    const spans = window(32, 5);
    plane.plan(spans.map((s) => ({ ...s.span, size: s.o.data.length })));
    const rand = prng(6);
    for (const { o, span } of spans) {
      const bytes = await plane.read(span.url, span.offset, span.length, span.etag);
      expect(Buffer.from(bytes!).equals(o.data.subarray(span.offset, span.offset + span.length))).toBe(true);
      // A GOP run reads its span piece by piece.
      const from = span.offset + Math.floor(rand() * span.length);
      const length = 1 + Math.floor(rand() * (span.offset + span.length - from));
      const piece = await plane.read(span.url, from, length, span.etag);
      expect(Buffer.from(piece!).equals(o.data.subarray(from, from + length))).toBe(true);
      // ... and a few samples past its clip's last frame (the decoder's reorder delay).
      const past = Math.min(o.data.length, span.offset + span.length + 20_000) - span.offset;
      const over = await plane.read(span.url, span.offset, past, span.etag);
      expect(Buffer.from(over!).equals(o.data.subarray(span.offset, span.offset + past))).toBe(true);
    }
    expect(plane.locates).toBe(1);
    expect(plane.hits).toBe(96);
    expect(plane.fallbacks).toBe(0);
    // Held while the spans are in the plan: a later clip of the same GOP may still read them.
    expect(svc.stats().leases).toBe(1);
    await plane.close();
    await until(() => svc.stats().leases === 0, "the batch's lease released on close");
  });

  it("locates a planned span in its window's batch when the cache holds only part of its read slack", async () => {
    const { svc } = await service();
    const o = objects[0]!;
    // A cold run stores what its reads took: the span and a few samples past it, not the whole slack.
    await get(svc, o.path, 0, 3 * BLOCK);
    await stored(svc, 3);
    const plane = planeOf(svc);
    const span = { url: signed(o.path), etag: rs.etag(o.path), offset: 100, length: 2 * BLOCK };
    plane.plan([{ ...span, size: o.data.length }]);
    const bytes = await plane.read(span.url, span.offset, span.length, span.etag);
    expect(Buffer.from(bytes!).equals(o.data.subarray(100, 100 + 2 * BLOCK))).toBe(true);
    const past = await plane.read(span.url, span.offset, 3 * BLOCK - 100, span.etag);
    expect(Buffer.from(past!).equals(o.data.subarray(100, 3 * BLOCK))).toBe(true);
    expect(plane.locates).toBe(1);
    // Past what is stored, a read is located (and pulled) on its own.
    const beyond = await plane.read(span.url, span.offset, 3 * BLOCK, span.etag);
    expect(Buffer.from(beyond!).equals(o.data.subarray(100, 100 + 3 * BLOCK))).toBe(true);
    expect(plane.locates).toBe(2);
    expect(plane.fallbacks).toBe(0);
  });

  it("pulls what a window's spans lack and answers each once stored, and releases spans that left the plan", async () => {
    const { svc } = await service();
    const plane = planeOf(svc);
    const o = objects[2]!;
    await get(svc, o.path, 0, 2 * BLOCK);
    await stored(svc, 2);
    const held = { url: signed(o.path), etag: rs.etag(o.path), offset: 0, length: 2 * BLOCK };
    const cold = { url: signed(o.path), etag: rs.etag(o.path), offset: 6 * BLOCK, length: 2 * BLOCK };
    const other = { url: signed(o.path), etag: rs.etag(o.path), offset: 9 * BLOCK, length: BLOCK };
    plane.plan([held, cold]);
    // The cold span's read waits for its batch's answer, which comes once the batch pulled it.
    const first = await plane.read(cold.url, cold.offset, cold.length, cold.etag);
    expect(Buffer.from(first!).equals(o.data.subarray(6 * BLOCK, 8 * BLOCK))).toBe(true);
    expect(plane.locates).toBe(1);
    expect(svc.stats().leases).toBe(2); // the stored span's, and the cold one's own
    // The next window no longer holds the stored span (its clip was skipped): its lease ends
    // with the next batch, which asks for the new span only.
    plane.plan([cold, other]);
    const bytes = await plane.read(other.url, other.offset, BLOCK, other.etag);
    expect(Buffer.from(bytes!).equals(o.data.subarray(9 * BLOCK, 10 * BLOCK))).toBe(true);
    expect(plane.locates).toBe(2);
    expect(svc.stats().locates).toBe(2);
    expect(svc.stats().leases).toBe(2);
    expect(plane.fallbacks).toBe(0);
  });

  it("reads a cold span piece by piece under its batch's answer, with no locate of its own", async () => {
    const { svc } = await service();
    const plane = planeOf(svc);
    const o = objects[2]!;
    const cold = { url: signed(o.path), etag: rs.etag(o.path), offset: 6 * BLOCK + 10, length: 3 * BLOCK };
    plane.plan([{ ...cold, size: o.data.length }]);
    // A GOP run reads its span piece by piece.
    for (const [from, to] of [
      [cold.offset, cold.offset + 100],
      [cold.offset + 100, cold.offset + 2 * BLOCK],
      [cold.offset + 2 * BLOCK, cold.offset + 3 * BLOCK],
    ] as const) {
      const bytes = await plane.read(cold.url, from, to - from, cold.etag);
      expect(Buffer.from(bytes!).equals(o.data.subarray(from, to))).toBe(true);
    }
    expect(plane.locates).toBe(1);
    expect(svc.stats().leases).toBe(1);
    expect(plane.fallbacks).toBe(0);
    // Its lease ends once the span leaves the plan.
    plane.plan([]);
    await until(() => svc.stats().leases === 0, "the span's lease released");
  });

  it("locates a cold stream with one request per plan window, whatever the number of reads", async () => {
    const { svc } = await service();
    const plane = planeOf(svc, true);
    // Clips of every object in turn, as a stream plans them: a window of WINDOW clips restated
    // every WINDOW / 2 clips, each clip read in three pieces (a GOP run) and a little past its end.
    const N = 48;
    const WINDOW = 16;
    const clips = Array.from({ length: N }, (_, i) => {
      const o = objects[i % objects.length]!;
      const offset = Math.floor(i / objects.length) * 9000 + (i % 3) * 100;
      return { o, span: { url: signed(o.path), etag: rs.etag(o.path), offset, length: 20_000 + (i % 5) * 3000 } };
    });
    let planned = 0;
    for (let i = 0; i < N; i++) {
      if (i + WINDOW / 2 >= planned && planned < N) {
        planned = Math.min(N, i + WINDOW);
        plane.plan(clips.slice(i, planned).map((c) => ({ ...c.span, size: c.o.data.length })));
      }
      const { o, span } = clips[i]!;
      const third = Math.floor(span.length / 3);
      for (const [from, to] of [
        [span.offset, span.offset + third],
        [span.offset + third, span.offset + 2 * third],
        [span.offset + 2 * third, span.offset + span.length + 500],
      ] as const) {
        const bytes = await plane.read(span.url, from, to - from, span.etag);
        expect(Buffer.from(bytes!).equals(o.data.subarray(from, to))).toBe(true);
      }
    }
    const windows = Math.ceil(N / (WINDOW / 2));
    expect(plane.fallbacks).toBe(0);
    expect(svc.stats().locates).toBeLessThanOrEqual(windows + 2);
    expect(plane.locates).toBe(svc.stats().locates);
    await plane.close();
    await until(() => svc.stats().leases === 0, "every lease released on close");
  });

  it("leaves a span the cache cannot get to the per-read path, with its typed error", async () => {
    const { svc } = await service();
    const plane = planeOf(svc, true);
    const o = objects[3]!;
    const changed = { url: signed(o.path), etag: '"another"', offset: 0, length: BLOCK };
    const good = { url: signed(o.path), etag: rs.etag(o.path), offset: BLOCK, length: BLOCK };
    plane.plan([changed, good]);
    expect(await plane.read(changed.url, changed.offset, changed.length, changed.etag)).toBeUndefined();
    expect(plane.fallbacks).toBe(1);
    const bytes = await plane.read(good.url, good.offset, good.length, good.etag);
    expect(Buffer.from(bytes!).equals(o.data.subarray(BLOCK, 2 * BLOCK))).toBe(true);
    const cache = await remoteCache(svc.url);
    cleanup.push(() => cache.close());
    await expect(cache.read(changed.url, 0, BLOCK, changed.etag)).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
    await plane.close();
    await until(() => svc.stats().leases === 0, "every lease released on close");
  });

  it("keeps located slots from reuse until read, when the cache is full", async () => {
    const { svc } = await service(2 * SLOT);
    const [a, b] = [objects[0]!, objects[1]!];
    await get(svc, a.path, 0, 2 * BLOCK);
    await stored(svc, 2);
    const plane = planeOf(svc);
    const span = { url: signed(a.path), etag: rs.etag(a.path), offset: 100, length: 2 * BLOCK - 200 };
    plane.plan([span]);
    await until(() => svc.stats().leases === 1, "the span leased ahead");
    // Another object's reads would evict a's blocks and reuse their slots were they not leased.
    for (let i = 0; i < 6; i++)
      expect((await get(svc, b.path, i * BLOCK, BLOCK)).equals(b.data.subarray(i * BLOCK, (i + 1) * BLOCK))).toBe(true);
    const bytes = await plane.read(span.url, span.offset, span.length, span.etag);
    expect(Buffer.from(bytes!).equals(a.data.subarray(100, 2 * BLOCK - 100))).toBe(true);
    expect(plane.hits).toBe(1);
    plane.plan([]);
    await until(() => svc.stats().leases === 0, "the lease released once the span left the plan");
  });

  it("close ends the leases of spans planned but never read", async () => {
    const { svc } = await service();
    for (const o of objects) await get(svc, o.path, 0, o.data.length);
    await stored(svc, ALL_BLOCKS);
    const plane = planeOf(svc, true);
    plane.plan(window(8, 9).map((s) => s.span));
    await until(() => svc.stats().leases === 1, "the window leased ahead");
    await plane.close();
    await until(() => svc.stats().leases === 0, "the lease released on close");
  });

  it("close ends a cold window's leases, one a span, with one request", async () => {
    const { svc } = await service();
    const plane = planeOf(svc, true);
    // Cold spans of four objects: each pulled and answered under a lease of its own.
    const spans = objects
      .slice(0, 4)
      .map((o) => ({ url: signed(o.path), etag: rs.etag(o.path), offset: 0, length: BLOCK }));
    plane.plan(spans);
    await until(() => svc.stats().leases === 4, "each span answered under its own lease");
    await plane.close();
    expect(plane.releases).toBe(1);
    expect(svc.stats().leases).toBe(0);
  });

  it("close ends a lease whose batch line never reached the plane", async () => {
    const { svc } = await service();
    for (const o of objects) await get(svc, o.path, 0, o.data.length);
    await stored(svc, ALL_BLOCKS);
    // A relay that passes nothing the cache sends back on the connections it accepts while
    // held: the batch's answer (its lease granted) is written but never reaches the plane.
    const relay = await tcpRelay(svc.url);
    cleanup.push(() => relay.close());
    relay.hold = true;
    const agent = new Agent();
    cleanup.push(() => agent.close());
    const plane = new LocalPlane(relay.url, agent);
    plane.plan(window(8, 9).map((s) => s.span));
    await until(() => svc.stats().leases === 1, "the window leased ahead");
    relay.hold = false;
    await plane.close();
    // Not left to its expiry (LOCATE_LEASE_MS, 30 s): ended at close.
    await until(() => svc.stats().leases === 0, "the unread lease ended on close", 5_000);
  });

  it("ends only the named client's leases, and wants a client", async () => {
    const { svc } = await service();
    for (const o of objects) await get(svc, o.path, 0, o.data.length);
    await stored(svc, ALL_BLOCKS);
    const spans = window(4, 3).map((s) => s.span);
    for (const client of ["a", "b"]) expect((await locate(svc, { client, spans })).status).toBe(200);
    expect(svc.stats().leases).toBe(2);
    const end = (query: string) => request(`${svc.url}/v1/leases${query}`, { method: "DELETE" });
    const res = await end("?client=a");
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ ended: 1 });
    expect(svc.stats().leases).toBe(1);
    const bad = await end("");
    expect(bad.statusCode).toBe(400);
    expect(((await bad.body.json()) as { error: { code: string } }).error.code).toBe("ERR_INVALID_ARGUMENT");
    expect(svc.stats().leases).toBe(1);
  });
});
