/**
 * The cache itself, without HTTP: the SDK uses it in-process when no cache URL is given, and the
 * service in server.ts is a thin layer over it. A read is split into blocks; each block comes
 * from memory (just pulled, still being written), from disk (verified), from a pull already in
 * flight, or from upstream: the blocks a read still lacks go as one range request per run of
 * consecutive blocks (up to `coalesceBytes`), split into blocks as the bytes arrive, and each
 * block is registered as in flight before the request starts, so no block is pulled twice.
 */
import { describeReceived } from "../common/errors.js";
import { CacheArgumentError, CacheClosedError, EtagChangedError, RangeNotSatisfiableError } from "./errors.js";
import { createLogger, type Logger } from "./log.js";
import { CacheMetrics } from "./metrics.js";
import { resolveOptions, type RangeCacheOptions, type ResolvedOptions } from "./options.js";
import { Planner, type PlannedBlock } from "./prefetch/planner.js";
import { ANONYMOUS_CLIENT, type CacheStats, type PlanAck, type PlanRange } from "./schema.js";
import { BlockStore } from "./store/block-store.js";
import { AllowList } from "./upstream/allow-list.js";
import { pinFromProbe, type Pin } from "./upstream/etag-pin.js";
import { Limiter } from "./upstream/limiter.js";
import { UpstreamPools } from "./upstream/pool.js";
import { fetchRange, type RangeFetchContext } from "./upstream/range-fetch.js";
import { withRetry } from "./upstream/retry.js";
import { SingleFlight } from "./upstream/single-flight.js";

export type { Pin };

export interface ReadOptions {
  /** The ETag the caller expects (from the manifest); a different upstream version is ERR_ETAG_CHANGED. */
  readonly etag?: string;
  readonly signal?: AbortSignal;
}

export interface PlanOptions {
  /** Whose plan this is: each client's plan replaces only its own; default one anonymous client. */
  readonly client?: string;
  /** Caps this plan's prefetch below the cache's budget. */
  readonly budgetBytes?: number;
}

export interface RangeCache {
  /** Bytes `[offset, offset + length)` of the object at `url` (a signed edge URL under a configured upstream). */
  read(url: string, offset: number, length: number, opts?: ReadOptions): Promise<Uint8Array>;
  /** The same bytes as consecutive chunks (one per block), pulled ahead (at least 4 blocks, up to `coalesceBytes`); for large spans. */
  stream(url: string, offset: number, length: number, opts?: ReadOptions): AsyncIterable<Uint8Array>;
  /** The pinned version and size of the object at `url`. */
  object(url: string, opts?: ReadOptions): Promise<Pin>;
  /** Replaces the client's prefetch plan with these upcoming ranges, soonest first; other clients' plans stay. */
  plan(ranges: readonly PlanRange[], opts?: PlanOptions): PlanAck;
  stats(): CacheStats;
  /** Prometheus text exposition. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

const LOOKAHEAD_BLOCKS = 4;

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** `indices` (ascending) as runs of consecutive ones, each at most `most` long. */
function runsOf(indices: readonly number[], most: number): { first: number; count: number }[] {
  const runs: { first: number; count: number }[] = [];
  for (const i of indices) {
    const last = runs[runs.length - 1];
    if (last && last.first + last.count === i && last.count < most) last.count++;
    else runs.push({ first: i, count: 1 });
  }
  return runs;
}

/**
 * Opens (or reopens) the block store in `dir` and returns the in-process cache.
 *
 * @example
 * const cache = await createRangeCache({ upstreams: ["https://edge.example"], dir: "/nvme/ec", maxBytes: 200e9 });
 * const bytes = await cache.read(signedUrl, 0, 1 << 20);
 * await cache.close();
 */
export async function createRangeCache(options: RangeCacheOptions): Promise<RangeCache> {
  const o = resolveOptions(options);
  const log = o.logger ?? createLogger(o.logLevel ?? "info");
  const impl = new RangeCacheImpl(o, log);
  await impl.open();
  return impl;
}

class RangeCacheImpl implements RangeCache {
  readonly #o: ResolvedOptions;
  readonly #log: Logger;
  readonly #allow: AllowList;
  readonly #pools: UpstreamPools;
  readonly #limiter: Limiter;
  readonly #metrics: CacheMetrics;
  readonly #planner: Planner;
  readonly #flights = new SingleFlight<Buffer>();
  readonly #pins = new Map<string, Promise<Pin>>();
  // The first request to an origin goes alone, so the burst behind it finds one warm (HTTP/2)
  // connection instead of opening one connection per concurrent request.
  readonly #warm = new Map<string, Promise<unknown>>();
  // Blocks pulled but not yet on disk: readers take them from here instead of pulling again.
  readonly #pending = new Map<string, Buffer>();
  readonly #writes = new Set<Promise<unknown>>();
  readonly #fetchCtx: RangeFetchContext;
  /** Most blocks in one upstream request. */
  readonly #runBlocks: number;
  /** Blocks a stream keeps in flight ahead of its reader, and how many must be free before it asks for more. */
  readonly #lookahead: number;
  readonly #refill: number;
  #store!: BlockStore;
  #closed = false;
  // Rejected when close() begins: pending reads settle with CacheClosedError at once instead of
  // whatever the torn-down pools and store would throw at them later. One per pending call, dropped
  // when it settles: a race against one promise that never settles would keep every result alive.
  readonly #closeWaiters = new Set<(err: CacheClosedError) => void>();

  constructor(o: ResolvedOptions, log: Logger) {
    this.#o = o;
    this.#log = log;
    this.#allow = new AllowList(o.upstreams);
    this.#limiter = new Limiter(o.maxInFlight);
    this.#runBlocks = Math.max(1, Math.floor(o.coalesceBytes / o.blockSize));
    this.#lookahead = Math.max(LOOKAHEAD_BLOCKS, this.#runBlocks);
    // Refilling a block at a time would send runs of one block: wait for a run's worth of room.
    this.#refill = Math.max(1, Math.min(this.#runBlocks, Math.floor(this.#lookahead / 2)));
    this.#pools = new UpstreamPools(this.#allow.origins, {
      connections: o.connections,
      streamsPerConnection: o.streamsPerConnection,
      headersTimeoutMs: o.headersTimeoutMs,
      bodyTimeoutMs: o.bodyTimeoutMs,
      connectTimeoutMs: o.connectTimeoutMs,
      ...(o.tls ? { tls: o.tls } : {}),
    });
    this.#metrics = new CacheMetrics({ inFlight: () => this.#limiter.active, resident: () => this.#store.residentBytes });
    this.#planner = new Planner({
      blockSize: o.blockSize,
      budgetBytes: o.prefetchBudgetBytes,
      concurrency: o.prefetchConcurrency,
      runBlocks: this.#runBlocks,
      idleMs: o.planIdleMs,
      prefetch: (run) => this.#prefetch(run),
      onError: (err, b) => this.#log.warn({ err, key: b.key, block: b.index }, "prefetch failed"),
    });
    this.#fetchCtx = {
      dispatcher: { request: () => Promise.reject(new Error("unused")) } as never,
      limiter: this.#limiter,
      retry: { retries: o.retries, minDelayMs: o.retryMinDelayMs, maxDelayMs: o.retryMaxDelayMs },
      onRetry: (err) => {
        this.#metrics.retry();
        this.#log.debug({ err }, "upstream retry");
      },
      onBytes: (n) => this.#metrics.upstreamBytes(n),
      onRequest: () => this.#metrics.upstreamRequest(),
      ...(o.hedgeAfterMs !== undefined ? { hedgeAfterMs: o.hedgeAfterMs } : {}),
      onHedge: () => void this.#metrics.hedges++,
    };
  }

  async open(): Promise<void> {
    this.#store = await BlockStore.open({
      dir: this.#o.dir,
      maxBytes: this.#o.maxBytes,
      blockSize: this.#o.blockSize,
      protect: (key, index) => this.#planner.neededSoon(key, index),
      onEvict: (bytes) => this.#metrics.evictions.inc(bytes),
      onCorrupt: (path) => {
        this.#metrics.corruptBlocks++;
        this.#log.warn({ path }, "dropped a block that failed verification");
      },
    });
    this.#log.info({ dir: this.#o.dir, blocks: this.#store.blocks, residentBytes: this.#store.residentBytes }, "block store open");
  }

  #ctxFor(url: URL): RangeFetchContext {
    return { ...this.#fetchCtx, dispatcher: this.#pools.get(url.origin) };
  }

  /** `work`, unless the cache closes first: then CacheClosedError, whatever `work` does after. */
  async #untilClosed<T>(work: Promise<T>): Promise<T> {
    work.catch(() => {});
    let reject!: (err: CacheClosedError) => void;
    const closing = new Promise<never>((_, rej) => (reject = rej));
    this.#closeWaiters.add(reject);
    try {
      return await Promise.race([work, closing]);
    } catch (err) {
      throw this.#closed && !(err instanceof CacheClosedError) ? new CacheClosedError({ cause: err }) : err;
    } finally {
      this.#closeWaiters.delete(reject);
    }
  }

  async object(raw: string, opts: ReadOptions = {}): Promise<Pin> {
    if (this.#closed) throw new CacheClosedError();
    return this.#untilClosed(this.#pin(this.#allow.check(raw), opts.etag));
  }

  async #pin(url: URL, expect?: string): Promise<Pin> {
    const key = url.pathname;
    let p = this.#pins.get(key);
    if (!p) {
      p = this.#probe(url);
      this.#pins.set(key, p);
      const mine = p;
      p.catch(() => this.#pins.get(key) === mine && this.#pins.delete(key));
    }
    const pin = await p;
    if (expect === undefined || pin.etag === expect) return pin;
    // The caller knows a newer (or older) version than the pin: learn again once.
    if (this.#pins.get(key) === p) this.#pins.delete(key);
    const fresh = await this.#pin(url);
    if (fresh.etag !== expect) throw new EtagChangedError(key, expect, fresh.etag);
    return fresh;
  }

  // The probe also warms the connection (and settles HTTP/2) before a burst of range reads.
  async #probe(url: URL): Promise<Pin> {
    const pool = this.#pools.get(url.origin);
    const warming = this.#warm.get(url.origin);
    if (warming) await warming.catch(() => {});
    const probe = withRetry(
      async () => {
        const release = await this.#limiter.acquire();
        try {
          this.#metrics.upstreamRequest();
          const res = await pool.request({ origin: url.origin, path: url.pathname + url.search, method: "GET", headers: { range: "bytes=0-0" } });
          await res.body.dump({ limit: 1 << 16 }).catch(() => res.body.destroy());
          return pinFromProbe(url.pathname, url.href, res.statusCode, res.headers);
        } finally {
          release();
        }
      },
      this.#fetchCtx.retry,
      { url: url.href, onRetry: () => this.#metrics.retry() },
    );
    if (!warming) this.#warm.set(url.origin, probe);
    return probe;
  }

  #check(offset: number, length: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0) throw new CacheArgumentError(`Expected a non-negative integer for offset but received ${describeReceived(offset)}`);
    if (!Number.isSafeInteger(length) || length < 0) throw new CacheArgumentError(`Expected a non-negative integer for length but received ${describeReceived(length)}`);
  }

  /** Validates a request for `[offset, offset + length)` and pins the object's version. */
  async #target(raw: string, offset: number, length: number, opts: ReadOptions): Promise<{ url: URL; pin: Pin }> {
    this.#check(offset, length);
    if (this.#closed) throw new CacheClosedError();
    const url = this.#allow.check(raw);
    const pin = await this.#pin(url, opts.etag);
    if (offset + length > pin.size) throw new RangeNotSatisfiableError(`bytes=${offset}-${offset + length - 1}`, pin.size);
    return { url, pin };
  }

  async read(raw: string, offset: number, length: number, opts: ReadOptions = {}): Promise<Uint8Array> {
    const { url, pin } = await this.#untilClosed(this.#target(raw, offset, length, opts));
    if (length === 0) return Buffer.alloc(0);
    const bs = this.#o.blockSize;
    const end = offset + length;
    const parts = this.#parts(url, pin, offset, end, Math.floor(offset / bs), Math.floor((end - 1) / bs));
    const chunks = await this.#untilClosed(Promise.all(parts));
    return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, length);
  }

  async *stream(raw: string, offset: number, length: number, opts: ReadOptions = {}): AsyncIterable<Uint8Array> {
    const { url, pin } = await this.#untilClosed(this.#target(raw, offset, length, opts));
    if (length === 0) return;
    const bs = this.#o.blockSize;
    const end = offset + length;
    const last = Math.floor((end - 1) / bs);
    const ahead: Promise<Buffer>[] = [];
    let b = Math.floor(offset / bs);
    const more = (): void => {
      const n = Math.min(this.#lookahead - ahead.length, last - b + 1);
      if (n <= 0) return;
      for (const p of this.#parts(url, pin, offset, end, b, b + n - 1)) {
        p.catch(() => {}); // awaited in order below; this only stops an unhandled rejection meanwhile
        ahead.push(p);
      }
      b += n;
    };
    more();
    while (ahead.length > 0) {
      const chunk = await this.#untilClosed(ahead.shift() as Promise<Buffer>);
      if (this.#lookahead - ahead.length >= this.#refill) more();
      yield chunk;
    }
  }

  #blockKey(pin: Pin, index: number): string {
    return `${index}:${pin.etag}:${pin.key}`;
  }

  /**
   * The parts of `[offset, end)` in blocks `first..last`, in order. Blocks in memory, in flight
   * or on disk come from there; the rest go upstream as one request per run of consecutive
   * blocks, each registered as in flight before this returns.
   */
  #parts(url: URL, pin: Pin, offset: number, end: number, first: number, last: number): Promise<Buffer>[] {
    const bs = this.#o.blockSize;
    const parts: Promise<Buffer>[] = [];
    const missing: number[] = [];
    const bounds = (b: number): { start: number; length: number } => {
      const from = Math.max(offset, b * bs);
      return { start: from - b * bs, length: Math.min(end, (b + 1) * bs) - from };
    };
    for (let b = first; b <= last; b++) {
      const { start, length } = bounds(b);
      const part = this.#slice(url, pin, b, start, length);
      if (!part) missing.push(b);
      parts.push(part ?? (undefined as never));
    }
    for (const run of runsOf(missing, this.#runBlocks)) {
      this.#pullRun(url, pin, run.first, run.count).forEach((pulled, i) => {
        const b = run.first + i;
        const { start, length } = bounds(b);
        this.#metrics.miss(false);
        parts[b - first] = pulled.then((data) => data.subarray(start, start + length));
      });
    }
    return parts;
  }

  /** Block `index`'s `[start, start + length)` from memory, a pull in flight or disk; undefined when it must be pulled. */
  #slice(url: URL, pin: Pin, index: number, start: number, length: number): Promise<Buffer> | undefined {
    this.#planner.noteRead(pin.key, index);
    const near = this.#inMemory(pin, index, start, length);
    if (near) return near;
    if (!this.#store.has({ key: pin.key, etag: pin.etag, index })) return undefined;
    return this.#fromDisk(url, pin, index, start, length);
  }

  /** The slice from a block just pulled (still being written) or from a pull in flight; undefined otherwise. */
  #inMemory(pin: Pin, index: number, start: number, length: number): Promise<Buffer> | undefined {
    const k = this.#blockKey(pin, index);
    const mem = this.#pending.get(k);
    if (mem) {
      this.#metrics.hit(length, false);
      return Promise.resolve(mem.subarray(start, start + length));
    }
    const flight = this.#flights.get(k);
    if (flight) {
      this.#metrics.miss(true);
      return flight.then((data) => data.subarray(start, start + length));
    }
    return undefined;
  }

  async #fromDisk(url: URL, pin: Pin, index: number, start: number, length: number): Promise<Buffer> {
    const disk = await this.#store.read({ key: pin.key, etag: pin.etag, index }, start, length);
    if (disk) {
      this.#metrics.hit(length, true);
      return disk;
    }
    // Evicted meanwhile, or dropped for failing its checksum: joined if another read got there first, else pulled again.
    const near = this.#inMemory(pin, index, start, length);
    if (near) return near;
    this.#metrics.miss(false);
    const data = await (this.#pullRun(url, pin, index, 1)[0] as Promise<Buffer>);
    return data.subarray(start, start + length);
  }

  /**
   * Pulls blocks `first .. first + count - 1` (none of them in flight) with one upstream range
   * request; returns a promise per block, each registered as that block's flight at once and
   * settled as soon as the block's last byte is in. A failure part-way keeps the blocks already
   * complete (served and stored) and rejects only the rest.
   */
  #pullRun(url: URL, pin: Pin, first: number, count: number): Promise<Buffer>[] {
    const waiting = Array.from({ length: count }, () => deferred<Buffer>());
    const promises = waiting.map((w, i) => this.#flights.do(this.#blockKey(pin, first + i), () => w.promise).promise);
    void this.#fetchRun(url, pin, first, waiting);
    return promises;
  }

  /** The upstream side of #pullRun; never rejects (its failures reject the blocks still waiting). */
  async #fetchRun(url: URL, pin: Pin, first: number, waiting: readonly Deferred<Buffer>[]): Promise<void> {
    const bs = this.#o.blockSize;
    const from = first * bs;
    const to = Math.min(pin.size, from + waiting.length * bs);
    const t0 = performance.now();
    let done = 0;
    // Bytes before `got` are final (a retry resumes after them), so every complete block goes on
    // to its readers and the store at once; a block is never handed on before its last byte.
    const deliver = (out: Buffer, got: number): void => {
      while (done < waiting.length && !this.#closed) {
        const blockEnd = Math.min(to - from, (done + 1) * bs);
        if (got < blockEnd) return;
        const data = out.subarray(done * bs, blockEnd);
        this.#metrics.blockLatency(performance.now() - t0);
        this.#land(pin, first + done, data);
        (waiting[done] as Deferred<Buffer>).resolve(data);
        done++;
      }
    };
    try {
      if (this.#closed) throw new CacheClosedError();
      const out = await fetchRange(this.#ctxFor(url), url, pin, from, to, undefined, deliver);
      deliver(out, out.length);
      if (done < waiting.length) throw new CacheClosedError();
    } catch (err) {
      if (err instanceof EtagChangedError && this.#pins.has(pin.key)) {
        // Later reads learn the new version; this one fails rather than mix versions.
        void this.#pins.get(pin.key)?.then((p) => p.etag === pin.etag && this.#pins.delete(pin.key), () => {});
      }
      for (let i = done; i < waiting.length; i++) (waiting[i] as Deferred<Buffer>).reject(err);
    }
  }

  /** A block just pulled: served from memory until the store has it. */
  #land(pin: Pin, index: number, data: Buffer): void {
    const k = this.#blockKey(pin, index);
    this.#pending.set(k, data);
    const write = this.#store
      .put({ key: pin.key, etag: pin.etag, index }, data)
      .then((stored) => {
        if (!stored) this.#metrics.bytesPassedThrough += data.length;
      })
      .catch((err: unknown) => {
        this.#metrics.bytesPassedThrough += data.length;
        this.#log.error({ err }, "block write failed: this block is served uncached");
      })
      .finally(() => {
        this.#pending.delete(k);
        this.#writes.delete(write);
      });
    this.#writes.add(write);
  }

  /** Pulls a planned run's blocks that are neither stored nor on their way, coalesced like a read's. */
  async #prefetch(run: readonly PlannedBlock[]): Promise<void> {
    const head = run[0];
    if (this.#closed || !head) return;
    const url = this.#allow.check(head.url);
    const pin = await this.#pin(url);
    if (this.#closed) return;
    const waits: Promise<Buffer>[] = [];
    const missing: number[] = [];
    for (const { index } of run) {
      if (index * this.#o.blockSize >= pin.size) break;
      const k = this.#blockKey(pin, index);
      if (this.#pending.has(k) || this.#store.has({ key: pin.key, etag: pin.etag, index })) continue;
      const flight = this.#flights.get(k);
      if (flight) waits.push(flight);
      else missing.push(index);
    }
    for (const r of runsOf(missing, this.#runBlocks)) waits.push(...this.#pullRun(url, pin, r.first, r.count));
    await Promise.all(waits);
  }

  plan(ranges: readonly PlanRange[], opts: PlanOptions = {}): PlanAck {
    if (this.#closed) throw new CacheClosedError();
    const keyed = ranges.map((r) => {
      this.#check(r.offset, r.length);
      return { ...r, key: this.#allow.check(r.url).pathname };
    });
    const { blocks, budgetBytes } = this.#planner.setPlan(opts.client ?? ANONYMOUS_CLIENT, keyed, opts.budgetBytes);
    return { ranges: ranges.length, blocks, budgetBytes };
  }

  stats(): CacheStats {
    const m = this.#metrics;
    const reads = m.hits + m.misses;
    return {
      hits: m.hits,
      misses: m.misses,
      coalesced: m.coalesced,
      hitRatio: reads ? m.hits / reads : 0,
      bytesFromUpstream: m.bytesFromUpstream,
      bytesFromDisk: m.bytesFromDisk,
      bytesFromMemory: m.bytesFromMemory,
      bytesPassedThrough: m.bytesPassedThrough,
      upstreamRequests: m.upstreamRequests,
      retries: m.retries,
      hedges: m.hedges,
      inFlight: this.#limiter.active,
      peakInFlight: this.#limiter.peak,
      evictions: this.#store.evictions,
      corruptBlocks: m.corruptBlocks,
      residentBytes: this.#store.residentBytes,
      maxBytes: this.#o.maxBytes,
      blocks: this.#store.blocks,
      blockSize: this.#o.blockSize,
      upstreamLatencyMs: m.latencyPercentiles(),
      httpVersions: this.#pools.versions(),
      plan: { clients: this.#planner.clients, pendingBlocks: this.#planner.pendingBlocks, prefetchedBlocks: this.#planner.prefetched, prefetchErrors: this.#planner.errors },
    };
  }

  metrics(): Promise<string> {
    return this.#metrics.text();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const reject of this.#closeWaiters) reject(new CacheClosedError());
    this.#planner.clear();
    await Promise.allSettled([...this.#writes]);
    await this.#store.close();
    await this.#pools.close();
  }
}
