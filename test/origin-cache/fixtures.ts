/** Shared set-up for origin-cache tests: deterministic object bytes, temp dirs, directory size. */
import { createHash } from "node:crypto";
import { readdirSync, statSync, type Dirent } from "node:fs";
import { mkdtemp, open, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { createRangeCache, type RangeCache, type RangeCacheOptions } from "../../origin-cache/index.js";
import { SLOT_HEADER, decodeSlotHeader, type SlotHeader } from "../../origin-cache/store/slot.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { startWanEmulator, type WanEmulator } from "../helpers/wan-emulator.js";

/** Deterministic pseudo-random bytes, so a wrong offset never reads as right. */
export function objectBytes(size: number, seed: string): Buffer {
  const out = Buffer.allocUnsafe(size);
  let block = createHash("sha256").update(seed).digest();
  for (let at = 0; at < size; at += block.length) {
    block.copy(out, at, 0, Math.min(block.length, size - at));
    block = createHash("sha256").update(block).digest();
  }
  return out;
}

/**
 * Answers `req` with `data` as one object of ETag "v1": the `bytes=A-B` range it asks (206) or
 * the whole (200). A bare handler for tests that build their own server (HTTP/1.1 or h2) around it.
 */
export function answerRange(
  data: Uint8Array,
  req: { headers: { range?: string | string[] } },
  res: { writeHead(status: number, headers: Record<string, string | number>): unknown; end(body: Uint8Array): unknown },
): void {
  const m = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range ?? ""));
  const start = m ? Number(m[1]) : 0;
  const end = m ? Math.min(Number(m[2]), data.length - 1) : data.length - 1;
  res.writeHead(m ? 206 : 200, {
    etag: '"v1"',
    "content-length": end - start + 1,
    ...(m ? { "content-range": `bytes ${start}-${end}/${data.length}` } : {}),
  });
  res.end(data.subarray(start, end + 1));
}

export async function tempDir(prefix = "ec-cache-test-"): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/**
 * Sum of the sizes of every file under `dir`, as the bound is defined. The walk is synchronous so
 * the cache (same process) cannot run a step in the middle of it, and files are counted once per
 * inode so a file renamed during the walk is not counted twice.
 */
export function dirBytesSync(dir: string): number {
  const seen = new Set<number>();
  let total = 0;
  const walk = (d: string): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else {
        try {
          const st = statSync(p);
          if (!seen.has(st.ino)) {
            seen.add(st.ino);
            total += st.size;
          }
        } catch {
          // Unlinked between readdir and stat.
        }
      }
    }
  };
  walk(dir);
  return total;
}

export async function dirBytes(dir: string): Promise<number> {
  return dirBytesSync(dir);
}

/** Samples the directory size until stopped; returns the largest size seen. */
export function watchDirSize(dir: string): { stop: () => Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, dirBytesSync(dir));
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return Math.max(peak, dirBytesSync(dir));
    },
  };
}

/** A small seeded PRNG (mulberry32) so random workloads repeat exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every slot of the store in `dir` that holds an intact header: its slab, offset and header. */
export async function slabSlots(dir: string): Promise<{ path: string; offset: number; header: SlotHeader }[]> {
  const out: { path: string; offset: number; header: SlotHeader }[] = [];
  for (const name of (await readdir(join(dir, "slabs"))).sort()) {
    const path = join(dir, "slabs", name);
    const slotBytes = Number(name.split("-")[0]);
    const fh = await open(path, "r");
    try {
      const { size } = await fh.stat();
      for (let offset = 0; offset < size; offset += slotBytes) {
        const buf = Buffer.alloc(SLOT_HEADER);
        await fh.read(buf, 0, SLOT_HEADER, offset);
        const header = decodeSlotHeader(buf);
        if (header) out.push({ path, offset, header });
      }
    } finally {
      await fh.close();
    }
  }
  return out;
}

/** Flips one bit of the byte at `at` in `path`, as a failing disk could. */
export async function flipByte(path: string, at: number): Promise<void> {
  const fh = await open(path, "r+");
  const b = Buffer.alloc(1);
  await fh.read(b, 0, 1, at);
  await fh.write(Buffer.from([(b[0] as number) ^ 0x01]), 0, 1, at);
  await fh.close();
}

/** Waits for a condition that background work makes true; fails the test if it never does. */
export async function until(cond: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The upstream of a test file: a range server holding `objects` behind the TLS + HTTP/2 WAN
 * emulator (started before the file's tests, closed after), per-test cleanups run after each
 * test, and caches opened in front of it with the tests' common settings.
 *
 * @example
 * const up = useUpstream({ "/v1/objects/a.mp4": objectBytes(1000, "a") }, { blockSize: 64 << 10 });
 * it("reads", async () => { const { cache } = await up.openCache(); await cache.read(up.signed("/v1/objects/a.mp4"), 0, 10); });
 */
export function useUpstream(
  objects: Record<string, Uint8Array>,
  defaults: Partial<RangeCacheOptions> & { rttMs?: number } = {},
) {
  const { rttMs = 2, ...base } = defaults;
  const cleanups: (() => Promise<void>)[] = [];
  let rs: RangeServer | undefined;
  let wan: WanEmulator | undefined;
  beforeAll(async () => {
    rs = await startRangeServer();
    for (const [path, data] of Object.entries(objects)) rs.put(path, data);
    wan = await startWanEmulator({ target: rs.url, rttMs });
  });
  afterEach(async () => {
    wan?.clearFaults();
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  afterAll(async () => {
    await wan?.close();
    await rs?.close();
  });
  return {
    get rs(): RangeServer {
      return rs!;
    },
    get wan(): WanEmulator {
      return wan!;
    },
    cleanups,
    /** A URL of `path` through the emulator, with a signature-shaped query as the edge's have. */
    signed: (path: string, front: WanEmulator = wan!): string => `${front.url}${path}?exp=9999999999&sig=abc`,
    /** A cache in front of the emulator (or `front`), in `dir` or a fresh temp dir; both cleaned up after the test. */
    async openCache(
      over: Partial<RangeCacheOptions> = {},
      dir?: string,
      front: WanEmulator = wan!,
    ): Promise<{ cache: RangeCache; dir: string }> {
      let path = dir;
      if (!path) {
        const d = await tempDir();
        cleanups.push(d.remove);
        path = d.path;
      }
      const cache = await createRangeCache({
        upstreams: [front.url],
        dir: path,
        maxBytes: 64 << 20,
        tls: { ca: front.ca },
        logLevel: "silent",
        ...base,
        ...over,
      });
      cleanups.push(() => cache.close());
      return { cache, dir: path };
    },
  };
}
