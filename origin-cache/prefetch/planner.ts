/**
 * Prefetch driven by the SDK's plan: the upcoming ranges become an ordered list of blocks, and
 * the blocks within a byte budget ahead of the reader are pulled, soonest first. Reads advance
 * the window; a new plan replaces what is left of the old one (pulls already running finish).
 */
export interface PlannedBlock {
  readonly url: string;
  readonly key: string;
  readonly index: number;
}

export interface PlannerOptions {
  readonly blockSize: number;
  readonly budgetBytes: number;
  readonly concurrency: number;
  /** Pulls one block into the store (a no-op when it is already there). */
  readonly prefetch: (block: PlannedBlock) => Promise<void>;
  readonly onError?: (err: unknown, block: PlannedBlock) => void;
}

const ref = (key: string, index: number): string => `${index}:${key}`;

export class Planner {
  readonly #opts: PlannerOptions;
  #blocks: PlannedBlock[] = [];
  #positions = new Map<string, number>();
  #consumed = new Set<number>();
  #started = new Set<number>();
  #cursor = 0;
  #budget: number;
  #generation = 0;
  #running = 0;
  prefetched = 0;
  errors = 0;

  constructor(opts: PlannerOptions) {
    this.#opts = opts;
    this.#budget = opts.budgetBytes;
  }

  /** Replaces the plan; returns the number of distinct blocks it names. */
  setPlan(ranges: readonly { url: string; key: string; offset: number; length: number }[], budgetBytes?: number): number {
    this.#generation++;
    this.#blocks = [];
    this.#positions = new Map();
    this.#consumed = new Set();
    this.#started = new Set();
    this.#cursor = 0;
    this.#budget = Math.min(this.#opts.budgetBytes, budgetBytes ?? Infinity);
    const bs = this.#opts.blockSize;
    for (const r of ranges) {
      for (let b = Math.floor(r.offset / bs); b <= Math.floor((r.offset + r.length - 1) / bs); b++) {
        const k = ref(r.key, b);
        if (this.#positions.has(k)) continue;
        this.#positions.set(k, this.#blocks.length);
        this.#blocks.push({ url: r.url, key: r.key, index: b });
      }
    }
    this.#pump();
    return this.#blocks.length;
  }

  get budgetBytes(): number {
    return this.#budget;
  }

  /** A read touched this block: the window moves past it. */
  noteRead(key: string, index: number): void {
    const at = this.#positions.get(ref(key, index));
    if (at === undefined || at < this.#cursor) return;
    this.#consumed.add(at);
    while (this.#consumed.has(this.#cursor)) this.#cursor++;
    this.#pump();
  }

  /** True when the block lies inside the prefetch window: eviction spares it. */
  neededSoon(key: string, index: number): boolean {
    const at = this.#positions.get(ref(key, index));
    return at !== undefined && at >= this.#cursor && at < this.#windowEnd() && !this.#consumed.has(at);
  }

  #windowEnd(): number {
    const blocks = this.#budget > 0 ? Math.max(1, Math.floor(this.#budget / this.#opts.blockSize)) : 0;
    return Math.min(this.#blocks.length, this.#cursor + blocks);
  }

  get pendingBlocks(): number {
    return this.#blocks.length - this.#cursor;
  }

  #pump(): void {
    const end = this.#windowEnd();
    for (let i = this.#cursor; i < end && this.#running < this.#opts.concurrency; i++) {
      if (this.#started.has(i) || this.#consumed.has(i)) continue;
      this.#started.add(i);
      const block = this.#blocks[i] as PlannedBlock;
      const generation = this.#generation;
      this.#running++;
      this.#opts
        .prefetch(block)
        .then(
          () => void this.prefetched++,
          (err: unknown) => {
            this.errors++;
            this.#opts.onError?.(err, block);
          },
        )
        .finally(() => {
          this.#running--;
          if (generation === this.#generation || this.#running < this.#opts.concurrency) this.#pump();
        });
    }
  }
}
