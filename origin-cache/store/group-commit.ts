/**
 * Batched fsync: writes that finished join the open group, and the group is made durable with
 * one sync per slab it touched when it has waited `ms` or holds `bytes` of writes, whichever
 * comes first. Syncs run one at a time; writes that finish during one join the next group.
 */
export interface GroupCommitOptions {
  readonly ms: number;
  readonly bytes: number;
  /** Makes every write to these slabs so far durable. */
  readonly sync: (slabs: ReadonlySet<number>) => Promise<void>;
}

interface Group {
  readonly slabs: Set<number>;
  bytes: number;
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

  /** Resolves once a write of `bytes` already done to `slab` is durable. */
  add(slab: number, bytes: number): Promise<void> {
    const g = (this.#group ??= { slabs: new Set(), bytes: 0, waiters: [] });
    g.slabs.add(slab);
    g.bytes += bytes;
    const done = new Promise<void>((resolve, reject) => g.waiters.push({ resolve, reject }));
    if (g.bytes >= this.#o.bytes) void this.flush();
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
