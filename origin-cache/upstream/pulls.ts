/**
 * Coalesced pulls: the blocks a read (or the plan) lacks go upstream as one range request per
 * run of consecutive blocks, each block registered as in flight before the request starts (so
 * no block is pulled twice) and handed on as soon as its last byte is in; the store gets the run's
 * blocks together when the request ends.
 *
 * A pull's buffer comes from a pool and goes back to it once the store has written every block
 * of it: a fresh buffer per pull is external memory that V8 counts towards its next full
 * collection, and a cold stream's pulls made those frequent (bench/README.md). So a
 * block's bytes are only lent: its readers copy what they keep (core/lookup.ts) in the reaction
 * to its promise or at once from the write-behind, never holding the block itself.
 */
import { type ReadPool, releaseRead } from "../../common/read-pool.js";
import { CacheClosedError, EtagChangedError } from "../errors.js";
import type { CacheMetrics } from "../metrics.js";
import { blockId, blockKey } from "../store/block-id.js";
import type { WriteBehind } from "../store/write-behind.js";
import type { Pin } from "./etag-pin.js";
import type { Pins } from "./pins.js";
import { fetchRange, type RangeFetchContext } from "./range-fetch.js";

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

const ignore = (): void => {};

export interface PullsOptions {
  readonly blockSize: number;
  /** The fetch context (dispatcher, limiter, retry policy, hooks) for an upstream URL. */
  readonly fetchContext: (url: URL) => RangeFetchContext;
  readonly metrics: CacheMetrics;
  readonly landing: WriteBehind;
  readonly pins: Pins;
  /** Upstream answered a pull made with `url`: it accepts that URL. */
  readonly onAccepted?: (url: URL) => void;
  readonly closed: () => boolean;
  /** Where pull buffers come from and go back to once written; a fresh buffer per pull when absent. */
  readonly buffers?: ReadPool;
}

export class Pulls {
  readonly #opts: PullsOptions;
  // Each block's pull in flight, by blockKey: added before its request starts, removed as it settles.
  readonly #flights = new Map<string, Promise<Buffer>>();

  constructor(opts: PullsOptions) {
    this.#opts = opts;
  }

  /** The pull in flight of the block keyed `key` (blockKey), if any. */
  flight(key: string): Promise<Buffer> | undefined {
    return this.#flights.get(key);
  }

  /**
   * Pulls blocks `first .. first + count - 1` (none of them in flight) with one upstream range
   * request; returns a promise per block, each registered as that block's flight at once and
   * settled as soon as the block's last byte is in. A failure part-way keeps the blocks already
   * complete (served and stored) and rejects only the rest.
   */
  pullRun(url: URL, pin: Pin, first: number, count: number): Promise<Buffer>[] {
    return this.#start(url, pin, first, count).promises;
  }

  /**
   * As pullRun, for a reader that copies the blocks out as they land: `sink` hears each block of
   * the run (its place in the run and its bytes, lent as pullRun's are) synchronously as its last
   * byte comes in, in order, and one promise settles once every block has gone to `sink`, or with
   * the pull's failure. One reaction per run, not a promise reaction and a closure per block.
   */
  pullRunTo(url: URL, pin: Pin, first: number, count: number, sink: (i: number, data: Buffer) => void): Promise<void> {
    return this.#start(url, pin, first, count, sink).last;
  }

  /**
   * As pullRun, for a reader that takes the blocks from the store: one promise that settles once
   * every block of the run is stored or its write has been tried, or with the pull's failure.
   */
  pullRunStored(url: URL, pin: Pin, first: number, count: number): Promise<void> {
    const { last, stored } = this.#start(url, pin, first, count, undefined, true);
    return last.then(() => stored);
  }

  #start(
    url: URL,
    pin: Pin,
    first: number,
    count: number,
    sink?: (i: number, data: Buffer) => void,
    single = sink !== undefined,
  ): { promises: Promise<Buffer>[]; last: Promise<void>; stored: Promise<void> } {
    const waiting: Deferred<Buffer>[] = new Array(count);
    const keys: string[] = new Array(count);
    const promises: Promise<Buffer>[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const k = blockKey(blockId(pin, first + i));
      const w = deferred<Buffer>();
      waiting[i] = w;
      keys[i] = k;
      // Already in flight after all: the caller joins that pull; this one's copy goes to no reader.
      const running = this.#flights.get(k);
      if (running) {
        promises[i] = running;
        w.promise.catch(ignore); // nobody waits on this copy: its failure is not unhandled
      } else this.#flights.set(k, (promises[i] = w.promise));
    }
    // Where only the last block's promise is the caller's, the others' failures are not unhandled.
    if (single) for (let i = 0; i < count - 1; i++) promises[i]?.catch(ignore);
    const stored = this.#fetchRun(url, pin, first, waiting, keys, sink);
    // This pull delivers its blocks in order, joined ones included (with its own copy of their
    // bytes, the same bytes under the pin): once its last block settles, every one has.
    const last = (waiting[count - 1] as Deferred<Buffer>).promise as Promise<unknown> as Promise<void>;
    return { promises, last, stored };
  }

  /** Block `i` of a run settled: no longer in flight (unless another pull holds its key). */
  #landed(keys: readonly string[], waiting: readonly Deferred<Buffer>[], i: number): void {
    const k = keys[i] as string;
    if (this.#flights.get(k) === (waiting[i] as Deferred<Buffer>).promise) this.#flights.delete(k);
  }

  /**
   * The upstream side of pullRun; never rejects (its failures reject the blocks still waiting).
   * Settles once the run's blocks are stored or their writes have been tried.
   */
  async #fetchRun(
    url: URL,
    pin: Pin,
    first: number,
    waiting: readonly Deferred<Buffer>[],
    keys: readonly string[],
    sink?: (i: number, data: Buffer) => void,
  ): Promise<void> {
    const { blockSize: bs, metrics, landing, closed } = this.#opts;
    const from = first * bs;
    const to = Math.min(pin.size, from + waiting.length * bs);
    const t0 = performance.now();
    let done = 0;
    // The run's blocks go to the store together, in one slab write per run of adjacent slots.
    const landed = landing.run();
    // Bytes before `got` are final (a retry resumes after them), so every complete block goes on
    // to its readers and the store at once; a block is never handed on before its last byte.
    const deliver = (out: Buffer, got: number): void => {
      while (done < waiting.length && !closed()) {
        const blockEnd = Math.min(to - from, (done + 1) * bs);
        if (got < blockEnd) return;
        const data = out.subarray(done * bs, blockEnd);
        // One sample per pull (its first block: what a read that missed waits for), not one per
        // block: a histogram observe per block cost the cold path more than the rest of deliver.
        if (done === 0) metrics.blockLatency(performance.now() - t0);
        sink?.(done, data);
        landed.land(blockId(pin, first + done), keys[done] as string, data);
        (waiting[done] as Deferred<Buffer>).resolve(data);
        this.#landed(keys, waiting, done);
        done++;
      }
    };
    const buffer = this.#opts.buffers?.take(to - from);
    let written: Promise<void> | undefined;
    try {
      if (closed()) throw new CacheClosedError();
      const out = await fetchRange(
        this.#opts.fetchContext(url),
        url,
        pin,
        from,
        to,
        undefined,
        deliver,
        buffer,
        // The native client reports the body's progress a block at a time: each block goes on as it lands.
        bs,
      );
      this.#opts.onAccepted?.(url);
      deliver(out, out.length);
      if (done < waiting.length) throw new CacheClosedError();
    } catch (err) {
      // Later reads learn the new version; this one fails rather than mix versions.
      if (err instanceof EtagChangedError) this.#opts.pins.forget(pin);
      for (let i = done; i < waiting.length; i++) {
        (waiting[i] as Deferred<Buffer>).reject(err);
        this.#landed(keys, waiting, i);
      }
    } finally {
      // Its blocks' readers have had them (each copied in its promise's reaction or at once from
      // the write-behind), and nothing writes into it any more: it is free once they are stored.
      written = landed.end();
      if (buffer) void written.then(() => releaseRead(buffer));
    }
    return written;
  }
}
