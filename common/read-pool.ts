/**
 * Span read buffers used again: a fresh buffer per read costs an mmap of new pages that the
 * kernel zeroes, then a collection of the old ones. A pooled read is lent to its caller; the
 * caller hands it back with `releaseRead` once nothing references its bytes (in the SDK, once the
 * decoder has copied each packet in; in the origin-cache, once a response body has been written).
 * A buffer never handed back is simply collected: releasing is an optimisation, never a requirement.
 */

/**
 * Buffers lent out, by the very view take() returned: a stale second release of a view finds
 * nothing, even once its memory is lent again under a new view.
 */
const lent = new WeakMap<Uint8Array, ReadPool>();

/** The smallest buffer the pool keeps: smaller reads share its size class. */
const MIN_BYTES = 64 << 10;

/** Idle bytes a pool keeps by default: a plan window's spans at ~150 KB each, several times over. */
export const READ_POOL_IDLE_BYTES = 32 << 20;

export interface ReadPoolStats {
  /** Buffers made because none of the size was idle. */
  readonly allocations: number;
  /** Reads served with a buffer handed back earlier. */
  readonly reuses: number;
  /** Bytes of buffers idle in the pool now (never above its bound). */
  readonly idleBytes: number;
}

/**
 * Buffers in power-of-two size classes; at most `maxIdleBytes` of them wait idle (a buffer handed
 * back past the bound is dropped). Reads larger than a quarter of the bound are not pooled.
 * `poison`: fill a buffer handed back with 0xa5, so a read still in use after its release shows.
 *
 * @example
 * const pool = new ReadPool();
 * const bytes = pool.take(150_000); // … read into it, decode …
 * releaseRead(bytes);
 */
export class ReadPool {
  readonly #free = new Map<number, ArrayBufferLike[]>();
  #idle = 0;
  #allocations = 0;
  #reuses = 0;

  constructor(
    readonly maxIdleBytes = READ_POOL_IDLE_BYTES,
    private readonly opts: { readonly poison?: boolean } = {},
  ) {}

  /** A buffer of exactly `length` bytes, contents undefined; lent unless too large to pool. */
  take(length: number): Buffer {
    const size = classOf(length);
    if (size > this.maxIdleBytes / 4) {
      this.#allocations++;
      return Buffer.allocUnsafeSlow(length);
    }
    let memory = this.#free.get(size)?.pop();
    if (memory) {
      this.#idle -= size;
      this.#reuses++;
    } else {
      memory = Buffer.allocUnsafeSlow(size).buffer;
      this.#allocations++;
    }
    const view = Buffer.from(memory, 0, length);
    lent.set(view, this);
    return view;
  }

  /** Takes back memory lent by take() (releaseRead calls this). */
  give(memory: ArrayBufferLike): void {
    const size = memory.byteLength;
    if (this.opts.poison) new Uint8Array(memory).fill(0xa5);
    if (this.#idle + size > this.maxIdleBytes) return;
    const list = this.#free.get(size);
    if (list) list.push(memory);
    else this.#free.set(size, [memory]);
    this.#idle += size;
  }

  stats(): ReadPoolStats {
    return { allocations: this.#allocations, reuses: this.#reuses, idleBytes: this.#idle };
  }
}

function classOf(length: number): number {
  return Math.max(MIN_BYTES, 2 ** Math.ceil(Math.log2(Math.max(1, length))));
}

/**
 * Hands the bytes of a read (the view the read returned, not a part of it) back to the pool they
 * were lent from; a no-op for any other bytes and for a second release. Only once nothing
 * references them: the next read may overwrite them.
 */
export function releaseRead(bytes: Uint8Array | undefined): void {
  const pool = bytes && lent.get(bytes);
  if (!pool) return;
  lent.delete(bytes);
  pool.give(bytes.buffer);
}
