/**
 * Batched fsync: writes that finished join the open group, and the group is made durable with
 * one sync per slab it touched when it has waited `ms` or holds `blocks` writes, whichever comes
 * first. Syncs run one at a time; writes that finish during one join the next group.
 */
export interface GroupCommitOptions {
  readonly ms: number;
  readonly blocks: number;
  /** Makes every write to these slabs so far durable. */
  readonly sync: (slabs: ReadonlySet<number>) => Promise<void>;
}

interface Group {
  readonly slabs: Set<number>;
  /** Blocks written in this group (a write of a run counts each of its blocks). */
  blocks: number;
  readonly waiters: { resolve: () => void; reject: (err: unknown) => void }[];
}

export class GroupCommit {
  readonly #o: GroupCommitOptions;
  #group: Group | undefined;
  #timer: NodeJS.Timeout | undefined;
  #chain: Promise<void> = Promise.resolve();

  constructor(o: GroupCommitOptions) {
    this.#o = o;
  }

  /** Resolves once a write already done to `slab` (of `blocks` blocks, default one) is durable. */
  add(slab: number, blocks = 1): Promise<void> {
    const g = (this.#group ??= { slabs: new Set(), blocks: 0, waiters: [] });
    g.slabs.add(slab);
    g.blocks += blocks;
    const done = new Promise<void>((resolve, reject) => g.waiters.push({ resolve, reject }));
    if (g.blocks >= this.#o.blocks) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), this.#o.ms);
    return done;
  }

  /** Commits the open group now; resolves when every group so far is settled. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const g = this.#group;
    this.#group = undefined;
    if (g) {
      this.#chain = this.#chain.then(() =>
        this.#o.sync(g.slabs).then(
          () => g.waiters.forEach((w) => w.resolve()),
          (err: unknown) => g.waiters.forEach((w) => w.reject(err)),
        ),
      );
    }
    return this.#chain;
  }
}
