/**
 * The cache itself, without HTTP: the SDK uses it in-process when no cache URL is given, and the
 * service in server.ts is a thin layer over it. This file wires the jobs together and validates
 * requests; each job has a file of its own: pins and warm-up (upstream/pins.ts), where a block
 * comes from (core/lookup.ts), coalesced pulls (upstream/pulls.ts), disk writes
 * (store/write-behind.ts), prefetch of the plan (prefetch/prefetch-run.ts) and the stats
 * (core/stats.ts).
 */
import { matchesStrong } from "../common/entity-tags.js";
import { describeReceived } from "../common/errors.js";
import { Limiter } from "../common/limiter.js";
import { ReadPool } from "../common/read-pool.js";
import { BlockLookup } from "./core/lookup.js";
import { cacheStats } from "./core/stats.js";
import type {
  LocateBatchLine,
  LocateBatchResponse,
  LocateResponse,
  LocateSpan,
} from "../common/schema/cache-locate.js";
import { type LocateLinesOptions, Locator } from "./core/locator.js";
import { CacheArgumentError, CacheClosedError, RangeNotSatisfiableError } from "./errors.js";
import { createLogger, type Logger } from "./log.js";
import { CacheMetrics } from "./metrics.js";
import { resolveOptions, type RangeCacheOptions, type ResolvedOptions } from "./options.js";
import { Planner } from "./prefetch/planner.js";
import { prefetchRun } from "./prefetch/prefetch-run.js";
import { ANONYMOUS_CLIENT, type CacheStats, type PlanAck, type PlanRange } from "./schema.js";
import { BlockStore } from "./store/block-store.js";
import { slotBytesFor } from "./store/slot.js";
import { WriteBehind } from "./store/write-behind.js";
import { AllowList } from "./upstream/allow-list.js";
import type { Pin } from "./upstream/etag-pin.js";
import { Pins } from "./upstream/pins.js";
import { UpstreamPools } from "./upstream/pool.js";
import { UrlGrants } from "./upstream/url-grants.js";
import type { RangeFetchContext } from "./upstream/range-fetch.js";
import { Pulls } from "./upstream/pulls.js";

export type { LocateLinesOptions, Pin };

export interface ReadOptions {
  /** The ETag the caller expects (from the manifest); a different upstream version is ERR_ETAG_CHANGED. */
  readonly etag?: string;
  readonly signal?: AbortSignal;
}

export interface ReadIntoOptions extends ReadOptions {
  /**
   * Where `read` puts the bytes: a buffer of at least `length` bytes, of which the first `length`
   * are returned. A reader that reuses its buffers pays no allocation, page faults or garbage
   * collection per read. Reuse it only once the read has settled (after a CacheClosedError, once
   * the cache has closed).
   */
  readonly into?: Uint8Array;
}

export interface ObjectOptions extends ReadOptions {
  /**
   * An If-Match field value (`*` or a list of entity tags): the pinned version must match one of
   * them strongly, else the object is learned again once; still none is ERR_ETAG_CHANGED. Takes
   * the place of `etag` when both are given.
   */
  readonly ifMatch?: string;
}

export interface LocateOptions extends ReadOptions {
  /** How long the lease lasts unless released first; default 30 s, at most 10 min. */
  readonly leaseMs?: number;
}

export interface PlanOptions {
  /** Whose plan this is: each client's plan replaces only its own; default one anonymous client. */
  readonly client?: string;
  /** Caps this plan's prefetch below the cache's budget. */
  readonly budgetBytes?: number;
}

export interface RangeCache {
  /** Bytes `[offset, offset + length)` of the object at `url` (a signed edge URL under a configured upstream). */
  read(url: string, offset: number, length: number, opts?: ReadIntoOptions): Promise<Uint8Array>;
  /** The same bytes as consecutive chunks (one per block), pulled ahead (at least 4 blocks, up to `coalesceBytes`); for large spans. */
  stream(url: string, offset: number, length: number, opts?: ReadOptions): AsyncIterable<Uint8Array>;
  /**
   * Where bytes `[offset, offset + length)` lie in the slab files (pulled and stored first, as a
   * read would), under a lease: until `release(lease.id)` or its expiry those slots are neither
   * evicted nor overwritten. For a reader on the same host that preads the slabs itself.
   */
  locate(url: string, offset: number, length: number, opts?: LocateOptions): Promise<LocateResponse>;
  /**
   * `locate` for many spans at once, under one lease, for the spans wholly stored now: nothing is
   * pulled or probed for it, and a span that is not (or is invalid) is null in the answer.
   */
  locateCached(
    spans: readonly LocateSpan[],
    opts?: { readonly leaseMs?: number; readonly owner?: string | undefined },
  ): Promise<LocateBatchResponse>;
  /**
   * A long-polled batch: `locateCached` for the spans stored now, then each other span pulled
   * (soonest first, as `locate` would) and answered under a lease of its own once stored; each span
   * is answered by exactly one `answer` call, those not answered within `waitMs` with null. Once
   * `gone()` (the asker left), nothing more is pulled for it and a lease granted meanwhile ends.
   */
  locateLines(
    spans: readonly LocateSpan[],
    opts: LocateLinesOptions,
    answer: (line: LocateBatchLine) => void,
  ): Promise<void>;
  /** Ends a lease from `locate`; ERR_LEASE_NOT_FOUND when it is not held (released or expired). */
  release(leaseId: string): void;
  /** Ends a lease from `locate` if it is still held; false when it was not. */
  releaseIfHeld(leaseId: string): boolean;
  /** Ends every lease granted to `owner` (a batch's `client`), read or not; how many. */
  releaseOwned(owner: string): number;
  /** The pinned version and size of the object at `url`. */
  object(url: string, opts?: ObjectOptions): Promise<Pin>;
  /** Replaces the client's prefetch plan with these upcoming ranges, soonest first; other clients' plans stay. */
  plan(ranges: readonly PlanRange[], opts?: PlanOptions): PlanAck;
  stats(): CacheStats;
  /** Prometheus text exposition. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

const LOOKAHEAD_BLOCKS = 4;
/** URL checks (UrlGrants) in flight at once, apart from the pulls' cap. */
const URL_CHECKS = 16;
/** Leases held at once, in all and by one client: each is a timer and a map entry. */
const MAX_LEASES = 1 << 16;
const MAX_CLIENT_LEASES = 1 << 14;
/** `#untilClosed` without a value of its own: it resolves with what the work did. */
const OWN_RESULT = Symbol("own result");

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
  readonly #pins: Pins;
  readonly #grants: UrlGrants;
  readonly #landing: WriteBehind;
  readonly #pulls: Pulls;
  readonly #lookup: BlockLookup;
  readonly #fetchCtx: RangeFetchContext;
  /** Most blocks in one upstream request. */
  readonly #runBlocks: number;
  /** Blocks a stream keeps in flight ahead of its reader, and how many must be free before it asks for more. */
  readonly #lookahead: number;
  readonly #refill: number;
  #store!: BlockStore;
  readonly #locator: Locator;
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
      client: o.upstreamClient,
      ...(o.tls ? { tls: o.tls } : {}),
    });
    this.#metrics = new CacheMetrics({
      inFlight: () => this.#limiter.active,
      resident: () => this.#store.residentBytes,
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
    const closed = (): boolean => this.#closed;
    const store = (): BlockStore => this.#store;
    this.#pins = new Pins({
      pools: this.#pools,
      limiter: this.#limiter,
      checks: new Limiter(URL_CHECKS),
      metrics: this.#metrics,
      retry: this.#fetchCtx.retry,
      onAccepted: (url) => this.#grants.accepted(url),
    });
    this.#grants = new UrlGrants({ validate: (url) => this.#pins.validate(url), grantMs: o.grantMs });
    this.#landing = new WriteBehind(store, this.#metrics, log);
    this.#pulls = new Pulls({
      blockSize: o.blockSize,
      fetchContext: (url) => ({ ...this.#fetchCtx, dispatcher: this.#pools.get(url.origin) }),
      metrics: this.#metrics,
      landing: this.#landing,
      pins: this.#pins,
      onAccepted: (url) => this.#grants.accepted(url),
      closed,
      // At most READ_POOL_IDLE_BYTES (32 MiB) of them idle; pulls over a quarter of that are not pooled.
      buffers: new ReadPool(),
    });
    this.#lookup = new BlockLookup({
      blockSize: o.blockSize,
      runBlocks: this.#runBlocks,
      store,
      landing: this.#landing,
      pulls: this.#pulls,
      metrics: this.#metrics,
      noteRead: (key, index) => this.#planner.noteRead(key, index),
      noteReads: (key, first, last) => this.#planner.noteReads(key, first, last),
    });
    const prefetch = {
      blockSize: o.blockSize,
      runBlocks: this.#runBlocks,
      allow: this.#allow,
      pins: this.#pins,
      lookup: this.#lookup,
      pulls: this.#pulls,
      closed,
    };
    this.#locator = new Locator({
      blockSize: o.blockSize,
      store,
      lookup: this.#lookup,
      metrics: this.#metrics,
      closed,
      target: (raw, offset, length, etag) => this.#target(raw, offset, length, etag === undefined ? {} : { etag }),
      known: (raw, offset, length, etag) => {
        this.#check(offset, length);
        return this.#pinned(raw, offset, length, etag === undefined ? {} : { etag });
      },
      untilClosed: (work) => this.#untilClosed(work),
      limits: {
        blocks: Math.floor(o.leaseBytes / slotBytesFor(o.blockSize)),
        clientBlocks: Math.floor(o.clientLeaseBytes / slotBytesFor(o.blockSize)),
        count: MAX_LEASES,
        clientCount: MAX_CLIENT_LEASES,
      },
    });
    this.#planner = new Planner({
      blockSize: o.blockSize,
      budgetBytes: o.prefetchBudgetBytes,
      concurrency: o.prefetchConcurrency,
      runBlocks: this.#runBlocks,
      idleMs: o.planIdleMs,
      prefetch: (run) => prefetchRun(prefetch, run),
      onError: (err, b) => this.#log.warn({ err, key: b.key, block: b.index }, "prefetch failed"),
    });
  }

  async open(): Promise<void> {
    this.#store = await BlockStore.open({
      dir: this.#o.dir,
      maxBytes: this.#o.maxBytes,
      blockSize: this.#o.blockSize,
      groupRead: this.#o.groupRead,
      protect: (key, index) => this.#planner.neededSoon(key, index),
      onEvict: (bytes) => this.#metrics.evictions.inc(bytes),
      onCorrupt: (path) => {
        this.#metrics.corruptBlocks++;
        this.#log.warn({ path }, "dropped a block that failed verification");
      },
      onSyncError: (err, blocks) => this.#log.error({ err, blocks }, "block sync failed: its blocks are pulled again"),
    });
    this.#log.info(
      { dir: this.#o.dir, blocks: this.#store.blocks, residentBytes: this.#store.residentBytes },
      "block store open",
    );
  }

  /**
   * `work`, unless the cache closes first: then CacheClosedError, whatever `work` does after.
   * Resolves with `value` when given (what a read hands back once its fill settles). One promise
   * per call and no race, since this wraps every warm read.
   */
  #untilClosed<T>(work: Promise<T>): Promise<T>;
  #untilClosed<V>(work: Promise<unknown>, value: V): Promise<V>;
  #untilClosed(work: Promise<unknown>, value: unknown = OWN_RESULT): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#closeWaiters.add(reject);
      work.then(
        (v) => {
          this.#closeWaiters.delete(reject);
          resolve(value === OWN_RESULT ? v : value);
        },
        (err) => {
          this.#closeWaiters.delete(reject);
          reject(this.#closed && !(err instanceof CacheClosedError) ? new CacheClosedError({ cause: err }) : err);
        },
      );
    });
  }

  async object(raw: string, opts: ObjectOptions = {}): Promise<Pin> {
    if (this.#closed) throw new CacheClosedError();
    const url = this.#allow.check(raw);
    this.#grants.refuseExpired(url);
    const ifMatch = opts.ifMatch;
    // Pinned already and acceptable, for a URL upstream accepted (every warm GET /v1/fetch): no wait, no close race.
    const known = this.#pins.peek(url);
    if (
      known &&
      this.#grants.allowed(url) &&
      (ifMatch === undefined ? opts.etag === undefined || known.etag === opts.etag : matchesStrong(ifMatch, known.etag))
    )
      return known;
    const pinned =
      ifMatch === undefined
        ? this.#pins.pin(url, opts.etag)
        : this.#pins.pin(url, ifMatch, (etag) => matchesStrong(ifMatch, etag));
    return this.#untilClosed(this.#accepted(url, pinned));
  }

  /**
   * `pinned` once upstream is known to accept `url`: a first touch's probe shows it; a URL new
   * to an object already pinned costs one request of its own (UrlGrants), once.
   */
  async #accepted(url: URL, pinned: Promise<Pin>): Promise<Pin> {
    const pin = await pinned;
    await this.#grants.check(url);
    return pin;
  }

  #check(offset: number, length: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0)
      throw new CacheArgumentError(
        `Expected a non-negative integer for offset but received ${describeReceived(offset)}`,
      );
    if (!Number.isSafeInteger(length) || length < 0)
      throw new CacheArgumentError(
        `Expected a non-negative integer for length but received ${describeReceived(length)}`,
      );
  }

  /** `#target` without a wait when the object's version is pinned already (every warm read); else undefined. */
  #pinned(raw: string, offset: number, length: number, opts: ReadOptions): { url: URL; pin: Pin } | undefined {
    if (this.#closed) throw new CacheClosedError();
    const url = this.#allow.check(raw);
    this.#grants.refuseExpired(url);
    const pin = this.#grants.allowed(url) ? this.#pinnedAs(url, opts.etag) : undefined;
    return pin && this.#within(url, pin, offset, length);
  }

  /** The version of `url` pinned already, if it is `etag` (when given); no request upstream. */
  #pinnedAs(url: URL, etag: string | undefined): Pin | undefined {
    const pin = this.#pins.peek(url);
    return pin && (etag === undefined || pin.etag === etag) ? pin : undefined;
  }

  #within(url: URL, pin: Pin, offset: number, length: number): { url: URL; pin: Pin } {
    if (offset + length > pin.size)
      throw new RangeNotSatisfiableError(`bytes=${offset}-${offset + length - 1}`, pin.size);
    return { url, pin };
  }

  /** Validates a request for `[offset, offset + length)` and pins the object's version. */
  async #target(raw: string, offset: number, length: number, opts: ReadOptions): Promise<{ url: URL; pin: Pin }> {
    this.#check(offset, length);
    if (this.#closed) throw new CacheClosedError();
    const url = this.#allow.check(raw);
    this.#grants.refuseExpired(url);
    return this.#within(url, await this.#accepted(url, this.#pins.pin(url, opts.etag)), offset, length);
  }

  read(raw: string, offset: number, length: number, opts: ReadIntoOptions = {}): Promise<Uint8Array> {
    try {
      this.#check(offset, length);
      const view = opts.into === undefined ? undefined : this.#view(opts.into, length);
      // A warm read (its object pinned) starts its fill now; else it pins first.
      const target = this.#pinned(raw, offset, length, opts);
      if (!target) return this.#untilClosed(this.#read(raw, offset, length, opts, view));
      const into = view ?? Buffer.allocUnsafeSlow(length);
      if (length === 0) return Promise.resolve(into);
      return this.#untilClosed(this.#fill(target.url, target.pin, offset, length, into), into);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** The caller's buffer for `into` as a Buffer of exactly `length` bytes (itself when it is one). */
  #view(into: Uint8Array, length: number): Buffer {
    if (!(into instanceof Uint8Array) || into.byteLength < length) {
      const got = into instanceof Uint8Array ? `${into.byteLength} bytes` : describeReceived(into);
      throw new CacheArgumentError(`Expected a Uint8Array of at least ${length} bytes for into but received ${got}`);
    }
    if (Buffer.isBuffer(into) && into.byteLength === length) return into;
    return Buffer.from(into.buffer, into.byteOffset, length);
  }

  // One buffer for the whole span: stored blocks are read into it in place, the rest copied in.
  async #read(raw: string, offset: number, length: number, opts: ReadOptions, view?: Buffer): Promise<Buffer> {
    const { url, pin } = await this.#target(raw, offset, length, opts);
    // Unless the caller gave one, its own memory, never a slice of the shared pool: a caller that
    // drops it frees it all.
    const into = view ?? Buffer.allocUnsafeSlow(length);
    if (length === 0) return into;
    await this.#fill(url, pin, offset, length, into);
    return into;
  }

  #fill(url: URL, pin: Pin, offset: number, length: number, into: Buffer): Promise<unknown> {
    const bs = this.#o.blockSize;
    const end = offset + length;
    return this.#lookup.fill(url, pin, offset, end, Math.floor(offset / bs), Math.floor((end - 1) / bs), into);
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
      for (const p of this.#lookup.parts(url, pin, offset, end, b, b + n - 1)) {
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

  locate(raw: string, offset: number, length: number, opts: LocateOptions = {}): Promise<LocateResponse> {
    return this.#locator.locate(raw, offset, length, opts.etag, opts.leaseMs);
  }

  locateCached(
    spans: readonly LocateSpan[],
    opts: { readonly leaseMs?: number; readonly owner?: string | undefined } = {},
  ): Promise<LocateBatchResponse> {
    return this.#locator.locateCached(spans, opts);
  }

  locateLines(
    spans: readonly LocateSpan[],
    opts: LocateLinesOptions,
    answer: (line: LocateBatchLine) => void,
  ): Promise<void> {
    return this.#locator.locateLines(spans, opts, answer);
  }

  release(leaseId: string): void {
    this.#locator.release(leaseId);
  }

  releaseIfHeld(leaseId: string): boolean {
    return this.#locator.releaseIfHeld(leaseId);
  }

  releaseOwned(owner: string): number {
    return this.#locator.releaseOwned(owner);
  }

  plan(ranges: readonly PlanRange[], opts: PlanOptions = {}): PlanAck {
    if (this.#closed) throw new CacheClosedError();
    const keyed = ranges.flatMap((r) => {
      this.#check(r.offset, r.length);
      const url = this.#allow.check(r.url);
      // Past its `exp`: upstream would refuse its pulls, so none is made.
      if (this.#grants.expired(url)) return [];
      // Clamped to the object's size where it is known: a length past it names no block.
      const size = this.#pins.peek(url)?.size;
      if (size === undefined) return [{ ...r, key: url.pathname }];
      if (r.offset >= size) return [];
      return [{ ...r, length: Math.min(r.length, size - r.offset), key: url.pathname }];
    });
    const { blocks, budgetBytes } = this.#planner.setPlan(opts.client ?? ANONYMOUS_CLIENT, keyed, opts.budgetBytes);
    return { ranges: ranges.length, blocks, budgetBytes };
  }

  stats(): CacheStats {
    return cacheStats({
      metrics: this.#metrics,
      limiter: this.#limiter,
      store: this.#store,
      pools: this.#pools,
      planner: this.#planner,
      leases: this.#locator.leases,
      leasedBlocks: this.#locator.leasedBlocks,
      maxBytes: this.#o.maxBytes,
      blockSize: this.#o.blockSize,
    });
  }

  metrics(): Promise<string> {
    return this.#metrics.text();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const reject of this.#closeWaiters) reject(new CacheClosedError());
    this.#planner.clear();
    this.#locator.clear();
    await this.#landing.settled();
    await this.#store.close();
    await this.#pools.close();
  }
}
