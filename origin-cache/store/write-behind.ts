/**
 * Blocks just pulled, on their way to disk: readers take them from memory until the store has
 * them, so a block is never pulled twice while it is being written, and close() waits for the
 * writes still running.
 */
import type { Logger } from "../log.js";
import type { CacheMetrics } from "../metrics.js";
import { blockKey, type BlockId } from "./block-id.js";
import type { BlockStore } from "./block-store.js";

export class WriteBehind {
  readonly #store: () => BlockStore;
  readonly #metrics: CacheMetrics;
  readonly #log: Logger;
  readonly #pending = new Map<string, Buffer>();
  readonly #writes = new Set<Promise<unknown>>();
  readonly #byKey = new Map<string, Promise<unknown>>();

  /** `store` is read at each write: the cache opens its store after it builds this. */
  constructor(store: () => BlockStore, metrics: CacheMetrics, log: Logger) {
    this.#store = store;
    this.#metrics = metrics;
    this.#log = log;
  }

  /** The block's bytes while its write runs (keyed by blockKey). */
  get(key: string): Buffer | undefined {
    return this.#pending.get(key);
  }

  /** Settles when the write of the block keyed `key` (blockKey) has, stored or declined; undefined when none runs. */
  written(key: string): Promise<unknown> | undefined {
    return this.#byKey.get(key);
  }

  /** A block just pulled: served from memory until the store has it. */
  land(id: BlockId, data: Buffer): void {
    const k = blockKey(id);
    this.#pending.set(k, data);
    const write = this.#store()
      .put(id, data)
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
        if (this.#byKey.get(k) === write) this.#byKey.delete(k);
      });
    this.#writes.add(write);
    this.#byKey.set(k, write);
  }

  /** Settles once every write begun so far has. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#writes]);
  }
}
