/**
 * Prefetch driven by the SDK's plans. The cache is shared by the ranks of a host, so each client
 * (one per open dataset) has its own plan: its upcoming ranges as an ordered list of blocks. A new
 * plan from a client replaces only what is left of that client's plan (pulls already running
 * finish). The global byte budget is shared out evenly among the clients that still have blocks
 * ahead, and pulls go round-robin over the clients, each one's soonest block first. A pull takes
 * a run: that block and the planned blocks in the window that continue it in the same object
 * (up to `runBlocks`), wherever the plan has them, so a clip's span goes upstream as one range
 * request, not one per block, and so do consecutive clips of one object that the window names
 * apart (a random order's window often holds a video's next GOP a few clips later).
 * A client that neither plans nor reads its planned blocks for `idleMs` is dropped, so a dead
 * rank's plan does not pin the cache. A restated plan keeps what its predecessor started or saw
 * read: the SDK restates its whole window every few clips, and pulling those blocks again (or,
 * warm, looking each one up again) is work for nothing; a block whose pull failed is taken again.
 * A plan is bounded whatever it asks: at most `maxClients` clients hold one, a client's plan
 * names at most `clientBlocks` blocks (and its fair share of `totalBlocks`), its soonest ones,
 * and making it visits a bounded number of blocks, so one request never holds the event loop
 * for long nor grows memory past those bounds.
 */
import { PlanLimitError } from "../errors.js";
export interface PlannedBlock {
  readonly url: string;
  readonly key: string;
  readonly index: number;
}

export interface PlannerOptions {
  readonly blockSize: number;
  readonly budgetBytes: number;
  /** Concurrent pulls (each one run of blocks). */
  readonly concurrency: number;
  /** Most blocks in one pull; default 1 (a pull per block). */
  readonly runBlocks?: number;
  /** A client's plan is dropped after this long without a plan or a read of its blocks. */
  readonly idleMs: number;
  /** Pulls consecutive blocks of one object into the store (skipping those already there or on their way). */
  readonly prefetch: (run: readonly PlannedBlock[]) => Promise<void>;
  readonly onError?: (err: unknown, block: PlannedBlock) => void;
  /** Milliseconds clock; default performance.now. */
  readonly now?: () => number;
  /** Most blocks one client's plan names; default PLAN_CLIENT_BLOCKS. */
  readonly clientBlocks?: number;
  /** Most blocks all plans name together; default PLAN_TOTAL_BLOCKS. */
  readonly totalBlocks?: number;
  /** Most clients with a plan; default PLAN_MAX_CLIENTS. */
  readonly maxClients?: number;
}

/** Blocks of one client's plan: far more than a window of clips ahead, at any block size. */
export const PLAN_CLIENT_BLOCKS = 1 << 14;
/** Blocks of every plan together (about 100 bytes of memory each). */
export const PLAN_TOTAL_BLOCKS = 1 << 17;
/** Clients with a plan at once: a host's ranks times the datasets each has open, with room. */
export const PLAN_MAX_CLIENTS = 256;
/** A plan's ranges may name the same blocks again and again: blocks visited per block kept. */
const VISITS_PER_BLOCK = 4;

interface ClientPlan {
  readonly blocks: PlannedBlock[];
  /** Each planned block's position in `blocks`, by object key, then block index. */
  readonly positions: Map<string, Map<number, number>>;
  readonly consumed: Set<number>;
  readonly started: Set<number>;
  /** Positions marked started because the previous plan had started or read them. */
  readonly carried: Set<number>;
  /** Positions whose pull failed: a restatement takes them again. */
  readonly failed: Set<number>;
  /** This client's own cap, in blocks (its plan's budgetBytes). */
  readonly cap: number;
  cursor: number;
  /** Lowest position that may still be unstarted. */
  scan: number;
  /** Blocks from the cursor granted by the shared budget. */
  window: number;
  seen: number;
}

export class Planner {
  readonly #opts: PlannerOptions;
  readonly #now: () => number;
  readonly #clients = new Map<string, ClientPlan>();
  #turn = 0;
  #running = 0;
  prefetched = 0;
  errors = 0;

  constructor(opts: PlannerOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
  }

  #blocksOf(bytes: number): number {
    return bytes > 0 ? Math.max(1, Math.floor(bytes / this.#opts.blockSize)) : 0;
  }

  /**
   * Replaces `client`'s plan (an empty one drops it); returns the distinct blocks it names and
   * the budget it runs under.
   */
  setPlan(
    client: string,
    ranges: readonly { url: string; key: string; offset: number; length: number }[],
    budgetBytes?: number,
  ): { blocks: number; budgetBytes: number } {
    this.#sweep();
    const o = this.#opts;
    const old = this.#clients.get(client);
    const clients = this.#clients.size + (old ? 0 : 1);
    if (!old && ranges.length > 0 && clients > (o.maxClients ?? PLAN_MAX_CLIENTS))
      throw new PlanLimitError(`${o.maxClients ?? PLAN_MAX_CLIENTS} clients with a plan`);
    const total = o.totalBlocks ?? PLAN_TOTAL_BLOCKS;
    let others = 0;
    for (const [c, p] of this.#clients) if (c !== client) others += p.blocks.length;
    // Its own cap, its fair share of the total, and what the others leave of it.
    const most = Math.max(
      0,
      Math.min(o.clientBlocks ?? PLAN_CLIENT_BLOCKS, Math.floor(total / clients), total - others),
    );
    let visits = most * VISITS_PER_BLOCK;
    const budget = Math.min(this.#opts.budgetBytes, budgetBytes ?? Infinity);
    const plan: ClientPlan = {
      blocks: [],
      positions: new Map(),
      consumed: new Set(),
      started: new Set(),
      carried: new Set(),
      failed: new Set(),
      cap: this.#blocksOf(budget),
      cursor: 0,
      scan: 0,
      window: 0,
      seen: this.#now(),
    };
    const bs = this.#opts.blockSize;
    all: for (const r of ranges) {
      for (let b = Math.floor(r.offset / bs); b <= Math.floor((r.offset + r.length - 1) / bs); b++) {
        // The soonest blocks are kept; the rest of a plan past its bounds is dropped.
        if (plan.blocks.length >= most || visits-- <= 0) break all;
        let of = plan.positions.get(r.key);
        if (!of) plan.positions.set(r.key, (of = new Map()));
        if (of.has(b)) continue;
        of.set(b, plan.blocks.length);
        plan.blocks.push({ url: r.url, key: r.key, index: b });
      }
    }
    if (old) carryOver(old, plan);
    // Re-inserted so the map's order stays by arrival; the round-robin turn is an index into it.
    this.#clients.delete(client);
    if (plan.blocks.length > 0) this.#clients.set(client, plan);
    this.#allocate();
    this.#pump();
    return { blocks: plan.blocks.length, budgetBytes: budget };
  }

  /** Drops every plan (the cache is closing). */
  clear(): void {
    this.#clients.clear();
  }

  /** A read touched this block: the window of every client that planned it moves past it. */
  noteRead(key: string, index: number): void {
    this.noteReads(key, index, index);
  }

  /** A read touched blocks `first..last` of one object: noteRead for each, the plan moved on once. */
  noteReads(key: string, first: number, last: number): void {
    this.#sweep();
    let moved = false;
    for (const plan of this.#clients.values()) {
      const of = plan.positions.get(key);
      if (!of) continue;
      let touched = false;
      for (let b = first; b <= last; b++) {
        const at = of.get(b);
        if (at === undefined || at < plan.cursor) continue;
        plan.consumed.add(at);
        touched = true;
      }
      if (!touched) continue;
      plan.seen = this.#now();
      while (plan.consumed.has(plan.cursor)) plan.cursor++;
      moved = true;
    }
    if (!moved) return;
    this.#allocate();
    this.#pump();
  }

  /** True when the block lies inside some client's prefetch window: eviction spares it. */
  neededSoon(key: string, index: number): boolean {
    this.#sweep();
    for (const plan of this.#clients.values()) {
      const at = plan.positions.get(key)?.get(index);
      if (at !== undefined && at >= plan.cursor && at < plan.cursor + plan.window && !plan.consumed.has(at))
        return true;
    }
    return false;
  }

  get pendingBlocks(): number {
    this.#sweep();
    let n = 0;
    for (const plan of this.#clients.values()) n += plan.blocks.length - plan.cursor;
    return n;
  }

  /** Blocks every live plan names, read or not. */
  get plannedBlocks(): number {
    let n = 0;
    for (const plan of this.#clients.values()) n += plan.blocks.length;
    return n;
  }

  /** Clients with a live plan. */
  get clients(): number {
    this.#sweep();
    return this.#clients.size;
  }

  #sweep(): void {
    const now = this.#now();
    let dropped = false;
    for (const [client, plan] of this.#clients) {
      if (now - plan.seen <= this.#opts.idleMs) continue;
      this.#clients.delete(client);
      dropped = true;
    }
    if (!dropped) return;
    this.#allocate();
    this.#pump();
  }

  /** Shares the budget out evenly (water-filling): a client needing less than its share leaves the rest to others. */
  #allocate(): void {
    let left = this.#blocksOf(this.#opts.budgetBytes);
    const plans = [...this.#clients.values()];
    const wants = plans.map((p) => Math.min(p.blocks.length - p.cursor, p.cap));
    const order = plans.map((_, i) => i).sort((a, b) => (wants[a] as number) - (wants[b] as number));
    order.forEach((i, rank) => {
      const share = Math.ceil(left / (order.length - rank));
      const grant = Math.min(wants[i] as number, share);
      (plans[i] as ClientPlan).window = grant;
      left -= grant;
    });
  }

  /**
   * The soonest unstarted block in the client's window and the unstarted blocks of the window
   * that continue it (same object, next index), wherever they lie in it; marked started.
   */
  #take(plan: ClientPlan): PlannedBlock[] | undefined {
    plan.scan = Math.max(plan.scan, plan.cursor);
    const free = (at: number): boolean => !plan.started.has(at) && !plan.consumed.has(at);
    while (plan.scan < plan.blocks.length && !free(plan.scan)) plan.scan++;
    const end = Math.min(plan.blocks.length, plan.cursor + plan.window);
    if (plan.scan >= end) return undefined;
    const head = plan.blocks[plan.scan] as PlannedBlock;
    const run = [head];
    plan.started.add(plan.scan);
    const most = Math.max(1, this.#opts.runBlocks ?? 1);
    const of = plan.positions.get(head.key);
    for (let index = head.index + 1; run.length < most; index++) {
      const at = of?.get(index);
      if (at === undefined || at < plan.cursor || at >= end || !free(at)) break;
      run.push(plan.blocks[at] as PlannedBlock);
      plan.started.add(at);
    }
    return run;
  }

  #pump(): void {
    const clients = [...this.#clients];
    let idle = 0;
    // One run per client per turn until the pulls are at the cap or no window has work left.
    while (this.#running < this.#opts.concurrency && clients.length > 0 && idle < clients.length) {
      const [client, plan] = clients[this.#turn++ % clients.length] as [string, ClientPlan];
      const run = this.#take(plan);
      if (!run) {
        idle++;
        continue;
      }
      idle = 0;
      this.#start(client, plan, run);
    }
  }

  #start(client: string, plan: ClientPlan, run: readonly PlannedBlock[]): void {
    this.#running++;
    this.#opts
      .prefetch(run)
      .then(
        () => void (this.prefetched += run.length),
        (err: unknown) => {
          this.errors++;
          this.#failed(client, plan, run);
          this.#opts.onError?.(err, run[0] as PlannedBlock);
        },
      )
      .finally(() => {
        this.#running--;
        this.#pump();
      });
  }

  /** A failed run's blocks are taken again by a later plan, and by the client's current one if it carried them over. */
  #failed(client: string, plan: ClientPlan, run: readonly PlannedBlock[]): void {
    for (const b of run) {
      const at = plan.positions.get(b.key)?.get(b.index);
      if (at !== undefined) plan.failed.add(at);
    }
    const now = this.#clients.get(client);
    if (!now || now === plan) return;
    for (const b of run) {
      const at = now.positions.get(b.key)?.get(b.index);
      if (at === undefined || !now.carried.delete(at)) continue;
      now.started.delete(at);
      now.scan = Math.min(now.scan, at);
    }
  }
}

/** Marks started in `next` the blocks `prev` started or saw read, unless their pull failed. */
function carryOver(prev: ClientPlan, next: ClientPlan): void {
  for (const [key, of] of next.positions) {
    const before = prev.positions.get(key);
    if (!before) continue;
    for (const [index, at] of of) {
      const was = before.get(index);
      if (was === undefined || prev.failed.has(was) || !(prev.started.has(was) || prev.consumed.has(was))) continue;
      next.started.add(at);
      next.carried.add(at);
    }
  }
}
