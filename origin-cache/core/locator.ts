/**
 * The local data plane inside the cache: where a span's bytes lie in the slab files (pulled and
 * stored first, or only as stored now), under a lease that keeps those slots from eviction and
 * reuse until it is released or expires. The HTTP side is routes/locate.ts; the long-polled
 * batch is locate-lines.ts.
 */
import {
  LOCATE_LEASE_MS,
  LOCATE_MAX_LEASE_MS,
  type LocateBatchLine,
  type LocateBatchResponse,
  type LocatedSpan,
  type LocateResponse,
  type LocateRun,
  type LocateSpan,
} from "../../common/schema/cache-locate.js";
import { describeReceived } from "../../common/errors.js";
import {
  CacheArgumentError,
  CacheClosedError,
  LeaseLimitError,
  LeaseNotFoundError,
  LocateUnavailableError,
} from "../errors.js";
import type { CacheMetrics } from "../metrics.js";
import { type BlockId, blockId, blockKey } from "../store/block-id.js";
import type { BlockStore } from "../store/block-store.js";
import type { Pin } from "../upstream/etag-pin.js";
import { type LeaseLimits, Leases } from "./leases.js";
import { locateLines } from "./locate-lines.js";
import type { BlockLookup } from "./lookup.js";

export interface LocatorOptions {
  readonly blockSize: number;
  readonly store: () => BlockStore;
  readonly lookup: BlockLookup;
  readonly metrics: CacheMetrics;
  readonly closed: () => boolean;
  /** Validates a read of `[offset, offset + length)` and pins its object (as a read would). */
  readonly target: (
    raw: string,
    offset: number,
    length: number,
    etag: string | undefined,
  ) => Promise<{ url: URL; pin: Pin }>;
  /** The same, answered only from what is known now (nothing asked of upstream); undefined when it is not. */
  readonly known: (
    raw: string,
    offset: number,
    length: number,
    etag: string | undefined,
  ) => { url: URL; pin: Pin } | undefined;
  /** `work`, unless the cache closes first (then CacheClosedError). */
  readonly untilClosed: <T>(work: Promise<T>) => Promise<T>;
  readonly limits: LeaseLimits;
}

/** Most bytes one span of a locate may name: a clip's span is far less; more is a read for GET. */
export const LOCATE_MAX_SPAN_BYTES = 256 << 20;

export interface LocateLinesOptions {
  readonly waitMs: number;
  readonly leaseMs?: number;
  /** Whose leases these are (a batch's `client`): `releaseOwned` ends them. */
  readonly owner?: string | undefined;
  readonly gone?: () => boolean;
}

/** A lease's length: `ms`, or the default, checked. */
export function leaseOf(ms: number | undefined): number {
  const leaseMs = ms ?? LOCATE_LEASE_MS;
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0 || leaseMs > LOCATE_MAX_LEASE_MS) {
    throw new CacheArgumentError(
      `Expected leaseMs from 1 to ${LOCATE_MAX_LEASE_MS} but received ${describeReceived(leaseMs)}`,
    );
  }
  return leaseMs;
}

function spanWithin(length: number): void {
  if (length > LOCATE_MAX_SPAN_BYTES)
    throw new CacheArgumentError(
      `Expected a span of at most ${LOCATE_MAX_SPAN_BYTES} bytes to locate but received ${length}; read it with GET /v1/fetch`,
    );
}

export class Locator {
  readonly #o: LocatorOptions;
  readonly #leases: Leases;

  constructor(o: LocatorOptions) {
    this.#o = o;
    this.#leases = new Leases(o.limits);
  }

  /** Leases held now. */
  get leases(): number {
    return this.#leases.size;
  }

  /** Blocks those leases hold. */
  get leasedBlocks(): number {
    return this.#leases.blocks;
  }

  async locate(
    raw: string,
    offset: number,
    length: number,
    etag: string | undefined,
    leaseMs: number | undefined,
  ): Promise<LocateResponse> {
    this.#o.metrics.locates++;
    return this.#locate(raw, { offset, length }, etag, leaseOf(leaseMs));
  }

  /**
   * `locate` of `[offset, offset + length)`; with `min`, only its first `min` bytes are pulled and
   * the rest located as far as stored. `leaseMs` is checked by the public caller (leaseOf), once.
   */
  async #locate(
    raw: string,
    s: { readonly offset: number; readonly length: number; readonly min?: number | undefined },
    etag: string | undefined,
    leaseMs: number,
    owner?: string,
  ): Promise<LocateResponse> {
    const { offset } = s;
    spanWithin(s.length);
    const need = Math.min(s.min ?? s.length, s.length);
    const { url, pin } = await this.#o.untilClosed(this.#o.target(raw, offset, need, etag));
    const wanted = this.#blockIds(pin, offset, need);
    // A block evicted between its write and the hold is pulled once more; then the store is too full.
    for (let attempt = 0; attempt < 2; attempt++) {
      await this.#o.untilClosed(this.#o.lookup.settle(url, pin, offset, offset + need, wanted.first, wanted.last));
      const end = need === s.length ? offset + need : Math.min(pin.size, this.#storedEnd(pin, s));
      const { first, ids } = need === s.length ? wanted : this.#blockIds(pin, offset, end - offset);
      const held = await this.#o.store().hold(ids);
      if (!held) continue;
      if (this.#o.closed()) {
        held.release();
        throw new CacheClosedError();
      }
      const runs = this.#runs(held.blocks, first, offset, end);
      const lease = this.#leases.grant(held.release, leaseMs, owner, ids.length);
      return { etag: pin.etag, size: pin.size, runs, lease };
    }
    throw new LocateUnavailableError(pin.key, wanted.first, wanted.last);
  }

  async locateCached(
    spans: readonly LocateSpan[],
    opts: { readonly leaseMs?: number; readonly owner?: string | undefined } = {},
  ): Promise<LocateBatchResponse> {
    this.#o.metrics.locates++;
    return this.#locateCached(spans, leaseOf(opts.leaseMs), opts.owner);
  }

  async locateLines(
    spans: readonly LocateSpan[],
    opts: LocateLinesOptions,
    answer: (line: LocateBatchLine) => void,
  ): Promise<void> {
    this.#o.metrics.locates++;
    const leaseMs = leaseOf(opts.leaseMs);
    if (this.#o.closed()) throw new CacheClosedError();
    return locateLines(spans, {
      waitMs: opts.waitMs,
      gone: opts.gone ?? this.#o.closed,
      stored: (some) => this.#locateCached(some, leaseMs, opts.owner),
      pull: (s) => this.#locate(s.url, s, s.etag, leaseMs, opts.owner),
      release: (id) => void this.#leases.end(id),
      answer,
    });
  }

  /** `locateCached` with `leaseMs` checked by the public caller (leaseOf), once. */
  async #locateCached(spans: readonly LocateSpan[], leaseMs: number, owner?: string): Promise<LocateBatchResponse> {
    if (this.#o.closed()) throw new CacheClosedError();
    const releases: (() => void)[] = [];
    // Blocks held, each counted once however many spans name it.
    const blocks = new Set<string>();
    const located = await Promise.all(
      spans.map(async (s): Promise<LocatedSpan | null> => {
        try {
          const known = this.#o.known(s.url, s.offset, s.length, s.etag);
          if (!known || s.length === 0 || s.length > LOCATE_MAX_SPAN_BYTES) return null;
          const { url, pin } = known;
          const end = this.#storedEnd(pin, s);
          const { first, last, ids } = this.#blockIds(pin, s.offset, end - s.offset);
          const held = await this.#o.store().hold(ids);
          if (!held) return null;
          releases.push(held.release);
          for (const id of ids) blocks.add(blockKey(id));
          // Every block is held, so this only counts the hits and tells the planner, as a read would.
          await this.#o.lookup.settle(url, pin, s.offset, end, first, last);
          return { etag: pin.etag, size: pin.size, runs: this.#runs(held.blocks, first, s.offset, end) };
        } catch {
          return null;
        }
      }),
    );
    const release = (): void => {
      for (const r of releases) r();
    };
    if (this.#o.closed()) {
      release();
      throw new CacheClosedError();
    }
    if (releases.length === 0) return { spans: located };
    try {
      return { spans: located, lease: this.#leases.grant(release, leaseMs, owner, blocks.size) };
    } catch (err) {
      // Past a cap on leases: nothing is located, as if nothing were stored.
      if (err instanceof LeaseLimitError) return { spans: located.map(() => null) };
      throw err;
    }
  }

  /** Where a batched span's answer ends: its end, or with `min`, past its first `min` bytes as far as blocks are stored. */
  #storedEnd(pin: Pin, s: Pick<LocateSpan, "offset" | "length" | "min">): number {
    const end = s.offset + s.length;
    if (s.min === undefined || s.min >= s.length) return end;
    const bs = this.#o.blockSize;
    const last = Math.floor((end - 1) / bs);
    let b = Math.floor((s.offset + s.min - 1) / bs) + 1;
    const store = this.#o.store();
    while (b <= last && store.has(blockId(pin, b))) b++;
    return Math.min(end, b * bs);
  }

  #blockIds(pin: Pin, offset: number, length: number): { first: number; last: number; ids: BlockId[] } {
    const bs = this.#o.blockSize;
    const first = Math.floor(offset / bs);
    const last = length === 0 ? first - 1 : Math.floor((offset + length - 1) / bs);
    return { first, last, ids: Array.from({ length: last - first + 1 }, (_, i) => blockId(pin, first + i)) };
  }

  /** Where `[offset, end)` lies in held blocks `first…`: adjacent pieces of one slab merged. */
  #runs(blocks: readonly LocateRun[], first: number, offset: number, end: number): LocateRun[] {
    const bs = this.#o.blockSize;
    const runs: LocateRun[] = [];
    blocks.forEach((b, i) => {
      const from = Math.max(offset, (first + i) * bs) - (first + i) * bs;
      const to = Math.min(end - (first + i) * bs, b.length);
      const prev = runs[runs.length - 1];
      if (prev && prev.path === b.path && prev.offset + prev.length === b.offset + from)
        runs[runs.length - 1] = { ...prev, length: prev.length + to - from };
      else runs.push({ path: b.path, offset: b.offset + from, length: to - from });
    });
    return runs;
  }

  release(leaseId: string): void {
    if (!this.#leases.end(leaseId)) throw new LeaseNotFoundError(leaseId);
  }

  releaseIfHeld(leaseId: string): boolean {
    return this.#leases.end(leaseId);
  }

  releaseOwned(owner: string): number {
    return this.#leases.endOwned(owner);
  }

  /** Ends every lease (the cache is closing). */
  clear(): void {
    this.#leases.clear();
  }
}
