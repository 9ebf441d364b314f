/**
 * Where each block of a read comes from: memory (just pulled, still being written), a pull
 * already in flight, disk (verified), or upstream, the missing ones as one request per run of
 * consecutive blocks (up to the run length), so a read costs as few upstream requests as it can.
 */
import type { CacheMetrics } from "../metrics.js";
import { blockId, blockKey } from "../store/block-id.js";
import type { BlockStore, Piece } from "../store/block-store.js";
import type { WriteBehind } from "../store/write-behind.js";
import type { Pin } from "../upstream/etag-pin.js";
import type { Pulls } from "../upstream/pulls.js";
import { runsOf } from "./runs.js";

export interface LookupOptions {
  readonly blockSize: number;
  /** Most blocks in one upstream request. */
  readonly runBlocks: number;
  /** Read at each lookup: the cache opens its store after it builds this. */
  readonly store: () => BlockStore;
  readonly landing: WriteBehind;
  readonly pulls: Pulls;
  readonly metrics: CacheMetrics;
  /** Told of every block read, so the plan can follow the reader. */
  readonly noteRead: (key: string, index: number) => void;
  /** The same for blocks `first..last` of one object at once. */
  readonly noteReads: (key: string, first: number, last: number) => void;
}

const SETTLED: Promise<unknown> = Promise.resolve();

/**
 * `[start, start + length)` of a block just pulled, copied: a pull's buffer goes back to its pool
 * once written (upstream/pulls.ts), so a reader that keeps bytes keeps a copy, taken at once.
 */
function copyOf(block: Buffer, start: number, length: number): Buffer {
  return Buffer.from(block.subarray(start, start + length));
}

export type BlockStanding =
  | { readonly kind: "held" }
  | { readonly kind: "pulling"; readonly flight: Promise<Buffer> }
  | { readonly kind: "missing" };

export class BlockLookup {
  readonly #opts: LookupOptions;

  constructor(opts: LookupOptions) {
    this.#opts = opts;
  }

  /**
   * The parts of `[offset, end)` in blocks `first..last`, in order. Blocks in memory, in flight
   * or on disk come from there; the rest go upstream as one request per run of consecutive
   * blocks, each registered as in flight before this returns.
   */
  parts(url: URL, pin: Pin, offset: number, end: number, first: number, last: number): Promise<Buffer>[] {
    const bs = this.#opts.blockSize;
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
    for (const run of runsOf(missing, this.#opts.runBlocks)) {
      this.#opts.pulls.pullRun(url, pin, run.first, run.count).forEach((pulled, i) => {
        const b = run.first + i;
        const { start, length } = bounds(b);
        this.#opts.metrics.miss(false);
        parts[b - first] = pulled.then((data) => copyOf(data, start, length));
      });
    }
    return parts;
  }

  /**
   * Fills `into` with `[offset, end)` (blocks `first..last`; `into[0]` is byte `offset`): blocks on
   * disk are read straight into it, one preadv per run of consecutive slots; blocks in memory or
   * in flight are copied in; the rest are pulled as in `parts`. Settles once every byte is in.
   */
  fill(url: URL, pin: Pin, offset: number, end: number, first: number, last: number, into: Buffer): Promise<unknown> {
    const { blockSize: bs, metrics, landing, pulls } = this.#opts;
    const store = this.#opts.store();
    // Built only when needed: a warm read (every block on disk) makes its pieces and one promise.
    let waits: Promise<unknown>[] | undefined;
    let pieces: Piece[] | undefined;
    let missing: number[] | undefined;
    this.#opts.noteReads(pin.key, first, last);
    for (let b = first; b <= last; b++) {
      const from = Math.max(offset, b * bs);
      const start = from - b * bs;
      const length = Math.min(end, (b + 1) * bs) - from;
      const at = from - offset;
      const id = blockId(pin, b);
      const k = blockKey(id);
      const mem = landing.get(k);
      if (mem) {
        metrics.hit(length, false);
        mem.copy(into, at, start, start + length);
        continue;
      }
      const flight = pulls.flight(k);
      if (flight) {
        metrics.miss(true);
        (waits ??= []).push(flight.then((data) => void data.copy(into, at, start, start + length)));
      } else if (store.hasKey(k)) (pieces ??= []).push({ id, key: k, start, length, at });
      else (missing ??= []).push(b);
    }
    if (missing) {
      for (const run of runsOf(missing, this.#opts.runBlocks)) {
        for (let i = 0; i < run.count; i++) metrics.miss(false);
        // Each block copied in as it lands, one promise for the run: a cold read of 1 MiB in 16
        // KiB blocks made 64 promise reactions and closures, more of the cache's CPU than the copy.
        const copyIn = (i: number, data: Buffer): void => {
          const b = run.first + i;
          const from = Math.max(offset, b * bs);
          const start = from - b * bs;
          data.copy(into, from - offset, start, Math.min(end, (b + 1) * bs) - b * bs);
        };
        (waits ??= []).push(pulls.pullRunTo(url, pin, run.first, run.count, copyIn));
      }
    }
    if (pieces) {
      const read = this.#readPieces(url, pin, pieces, into);
      if (!waits) return read;
      waits.push(read);
    }
    return waits === undefined ? SETTLED : waits.length === 1 ? (waits[0] as Promise<unknown>) : Promise.all(waits);
  }

  /** Stored pieces read into place; those the store could not serve (evicted, bad) got elsewhere. */
  #readPieces(url: URL, pin: Pin, pieces: readonly Piece[], into: Buffer): Promise<unknown> {
    const metrics = this.#opts.metrics;
    return this.#opts
      .store()
      .readInto(pieces, into)
      .then((failed) => {
        let f = 0;
        for (let i = 0; i < pieces.length; i++) {
          if (failed[f] === i) f++;
          else metrics.hit((pieces[i] as Piece).length, true);
        }
        if (failed.length === 0) return undefined;
        // Evicted meanwhile, or dropped as bad: from memory, a pull in flight, or pulled again.
        return Promise.all(
          failed.map((i) => {
            const p = pieces[i] as Piece;
            return this.#fromDisk(url, pin, p.id.index, p.start, p.length).then((data) => void data.copy(into, p.at));
          }),
        );
      });
  }

  /**
   * Settles once each of blocks `first..last` is stored, or its write has been tried: blocks on
   * their way to disk are waited for, blocks in flight are waited for and then their write, the
   * rest are pulled (as one request per run) and written. For readers that take the bytes from
   * the slabs themselves.
   */
  settle(url: URL, pin: Pin, offset: number, end: number, first: number, last: number): Promise<unknown> {
    const { blockSize: bs, metrics, landing, pulls } = this.#opts;
    const store = this.#opts.store();
    const waits: Promise<unknown>[] = [];
    const missing: number[] = [];
    const written = (k: string) => () => landing.written(k);
    this.#opts.noteReads(pin.key, first, last);
    for (let b = first; b <= last; b++) {
      const k = blockKey(blockId(pin, b));
      if (store.hasKey(k)) {
        metrics.hit(Math.min(end, (b + 1) * bs) - Math.max(offset, b * bs), true);
        continue;
      }
      const writing = landing.written(k);
      const flight = pulls.flight(k);
      if (writing) waits.push(writing);
      else if (flight) {
        metrics.miss(true);
        waits.push(flight.then(written(k)));
      } else missing.push(b);
    }
    for (const run of runsOf(missing, this.#opts.runBlocks)) {
      for (let i = 0; i < run.count; i++) metrics.miss(false);
      // One promise a run, not a reaction and two closures a block: the run's writes, once it is in.
      waits.push(pulls.pullRunStored(url, pin, run.first, run.count));
    }
    return Promise.all(waits);
  }

  /** Block `index`'s standing:  /** Block `index`'s standing: stored or in memory, being pulled (with the pull's promise), or to be pulled. */
  standing(pin: Pin, index: number): BlockStanding {
    const k = blockKey(blockId(pin, index));
    if (this.#opts.landing.get(k) || this.#opts.store().hasKey(k)) return { kind: "held" };
    const flight = this.#opts.pulls.flight(k);
    return flight ? { kind: "pulling", flight } : { kind: "missing" };
  }

  /** Block `index`'s `[start, start + length)` from memory, a pull in flight or disk; undefined when it must be pulled. */
  #slice(url: URL, pin: Pin, index: number, start: number, length: number): Promise<Buffer> | undefined {
    this.#opts.noteRead(pin.key, index);
    const near = this.#inMemory(pin, index, start, length);
    if (near) return near;
    if (!this.#opts.store().has(blockId(pin, index))) return undefined;
    return this.#fromDisk(url, pin, index, start, length);
  }

  /** The slice from a block just pulled (still being written) or from a pull in flight; undefined otherwise. */
  #inMemory(pin: Pin, index: number, start: number, length: number): Promise<Buffer> | undefined {
    const k = blockKey(blockId(pin, index));
    const mem = this.#opts.landing.get(k);
    if (mem) {
      this.#opts.metrics.hit(length, false);
      return Promise.resolve(copyOf(mem, start, length));
    }
    const flight = this.#opts.pulls.flight(k);
    if (flight) {
      this.#opts.metrics.miss(true);
      return flight.then((data) => copyOf(data, start, length));
    }
    return undefined;
  }

  async #fromDisk(url: URL, pin: Pin, index: number, start: number, length: number): Promise<Buffer> {
    const disk = await this.#opts.store().read(blockId(pin, index), start, length);
    if (disk) {
      this.#opts.metrics.hit(length, true);
      return disk;
    }
    // Evicted meanwhile, or dropped for failing its checksum: joined if another read got there first, else pulled again.
    const near = this.#inMemory(pin, index, start, length);
    if (near) return near;
    this.#opts.metrics.miss(false);
    const data = await (this.#opts.pulls.pullRun(url, pin, index, 1)[0] as Promise<Buffer>);
    return copyOf(data, start, length);
  }
}
