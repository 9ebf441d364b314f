/**
 * Blocks just pulled, on their way to disk: readers take them from memory until the store has
 * them, so a block is never pulled twice while it is being written, and close() waits for the
 * writes still running. The blocks of one pull land one by one as they arrive and go to the
 * store together, every FLUSH_BYTES and when the pull ends (`BlockStore.putRun`: one slab write
 * per run of adjacent slots, not one per block).
 */
import type { Logger } from "../log.js";
import type { CacheMetrics } from "../metrics.js";
import type { BlockId } from "./block-id.js";
import type { BlockStore } from "./block-store.js";

/**
 * A long pull's blocks go to the store in pieces of this many bytes (at least one block): a
 * located read waits for its blocks to be stored, and should not wait for the rest of an 8 MiB
 * pull to arrive; 16 blocks of 16 KiB still make one write.
 */
export const FLUSH_BYTES = 256 << 10;

/** The blocks of one pull as they land; `end` hands the last of them to the store. */
export interface LandingRun {
  /** A block just pulled (keyed `key`, its blockKey): served from memory from now until the store has it. */
  land(id: BlockId, key: string, data: Buffer): void;
  /** Writes the blocks landed so far (none may land after); settles once every block landed is stored or declined. */
  end(): Promise<void>;
}

interface Run {
  readonly ids: BlockId[];
  readonly keys: string[];
  readonly datas: Buffer[];
  /** Settles once the run's blocks are stored or declined. */
  readonly done: Promise<void>;
  readonly settle: () => void;
  /** Handed to the store already. */
  writing: boolean;
}

export class WriteBehind {
  readonly #store: () => BlockStore;
  readonly #metrics: CacheMetrics;
  readonly #log: Logger;
  readonly #pending = new Map<string, Buffer>();
  readonly #byKey = new Map<string, Promise<void>>();
  // Runs begun and not yet settled: their blocks landed, their write pending or running.
  readonly #runs = new Set<Run>();

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

  /** The blocks of one pull, landed as they come and written together every FLUSH_BYTES and when it ends. */
  run(): LandingRun {
    let run = this.#begin();
    let bytes = 0;
    // The pieces written before the last: a pull's buffer is free once all of them are.
    let earlier: Promise<void>[] | undefined;
    return {
      land: (id, k, data) => {
        this.#pending.set(k, data);
        this.#byKey.set(k, run.done);
        run.ids.push(id);
        run.keys.push(k);
        run.datas.push(data);
        bytes += data.length;
        if (bytes >= FLUSH_BYTES) {
          this.#write(run);
          (earlier ??= []).push(run.done);
          run = this.#begin();
          bytes = 0;
        }
      },
      end: () => {
        this.#write(run);
        if (!earlier) return run.done;
        earlier.push(run.done);
        return Promise.all(earlier).then(() => undefined);
      },
    };
  }

  #begin(): Run {
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    const run: Run = { ids: [], keys: [], datas: [], done, settle, writing: false };
    this.#runs.add(run);
    return run;
  }

  #write(run: Run): void {
    if (run.writing) return;
    run.writing = true;
    const { ids, keys, datas } = run;
    const settled = (): void => {
      for (const k of keys) {
        this.#pending.delete(k);
        if (this.#byKey.get(k) === run.done) this.#byKey.delete(k);
      }
      this.#runs.delete(run);
      run.settle();
    };
    if (ids.length === 0) {
      settled();
      return;
    }
    let results: Promise<boolean>[];
    try {
      results = this.#store().putRun(ids, datas);
    } catch (err) {
      results = ids.map(() => Promise.reject(err));
    }
    // The blocks of one slab write share a promise: one reaction per write, not per block.
    let failed: unknown;
    const writes: Promise<void>[] = [];
    for (let i = 0; i < results.length; ) {
      const p = results[i] as Promise<boolean>;
      let bytes = 0;
      for (; i < results.length && results[i] === p; i++) bytes += (datas[i] as Buffer).length;
      writes.push(
        p.then(
          (stored) => {
            if (!stored) this.#metrics.bytesPassedThrough += bytes;
          },
          (err: unknown) => {
            failed ??= err;
            this.#metrics.bytesPassedThrough += bytes;
          },
        ),
      );
    }
    void (writes.length === 1 ? (writes[0] as Promise<void>) : Promise.all(writes)).then(() => {
      if (failed !== undefined)
        this.#log.error({ err: failed }, "block write failed: the blocks of this pull are served uncached");
      settled();
    });
  }

  /** Writes the runs still open and settles once every write begun so far has. */
  async settled(): Promise<void> {
    const runs = [...this.#runs];
    for (const run of runs) this.#write(run);
    await Promise.all(runs.map((r) => r.done));
  }
}
