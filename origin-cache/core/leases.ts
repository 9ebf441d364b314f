/**
 * Leases of the local data plane: while one is held, the slots it names stay where they are (no
 * eviction, no reuse); it ends when its holder releases it or, for a holder that went away
 * (killed, hung), when it expires. Leases are capped, per client and in all, in number and in
 * the blocks they hold, well below the store, so that eviction always has room: a lease past a
 * cap is refused (ERR_LEASE_LIMIT) and its reader reads through GET instead.
 */
import { randomUUID } from "node:crypto";
import type { Lease } from "../../common/schema/cache-locate.js";
import { LeaseLimitError } from "../errors.js";

export interface LeaseLimits {
  /** Most blocks held by all leases together, and by one client's. */
  readonly blocks: number;
  readonly clientBlocks: number;
  /** Most leases held in all, and by one client. */
  readonly count: number;
  readonly clientCount: number;
}

interface Held {
  readonly release: () => void;
  readonly timer: NodeJS.Timeout;
  /** The client it was granted to, where the request named one. */
  readonly owner: string | undefined;
  readonly blocks: number;
}

/** Whose leases a request without a client counts as. */
const NO_CLIENT = "\u0000anonymous";

export class Leases {
  readonly #held = new Map<string, Held>();
  readonly #limits: LeaseLimits;
  /** Leases and blocks held, by client (NO_CLIENT for the unnamed), and in all. */
  readonly #use = new Map<string, { count: number; blocks: number }>();
  #blocks = 0;

  constructor(limits: LeaseLimits) {
    this.#limits = limits;
  }

  /**
   * A lease over `blocks` blocks that `release` lets go (granted to `owner`, if named), ended by
   * `end(id)` or after `ms`. Past a cap, `release` is called at once and ERR_LEASE_LIMIT thrown.
   */
  grant(release: () => void, ms: number, owner: string | undefined, blocks: number): Lease {
    const who = owner ?? NO_CLIENT;
    const use = this.#use.get(who) ?? { count: 0, blocks: 0 };
    const l = this.#limits;
    const over =
      this.#held.size >= l.count
        ? `${l.count} leases in all`
        : use.count >= l.clientCount
          ? `${l.clientCount} leases per client`
          : this.#blocks + blocks > l.blocks
            ? `${l.blocks} leased blocks in all`
            : use.blocks + blocks > l.clientBlocks
              ? `${l.clientBlocks} leased blocks per client`
              : undefined;
    if (over !== undefined) {
      release();
      throw new LeaseLimitError(over, blocks);
    }
    use.count++;
    use.blocks += blocks;
    this.#use.set(who, use);
    this.#blocks += blocks;
    const id = randomUUID();
    const timer = setTimeout(() => this.end(id), ms);
    timer.unref();
    this.#held.set(id, { release, timer, owner, blocks });
    return { id, expiresAt: Date.now() + ms };
  }

  /** Ends a lease; false when there is none by that id (ended, expired, or never granted). */
  end(id: string): boolean {
    const h = this.#held.get(id);
    if (!h) return false;
    this.#held.delete(id);
    clearTimeout(h.timer);
    const who = h.owner ?? NO_CLIENT;
    const use = this.#use.get(who);
    if (use && --use.count === 0) this.#use.delete(who);
    else if (use) use.blocks -= h.blocks;
    this.#blocks -= h.blocks;
    h.release();
    return true;
  }

  /** Ends every lease granted to `owner`; how many. */
  endOwned(owner: string): number {
    let ended = 0;
    for (const [id, h] of [...this.#held]) if (h.owner === owner && this.end(id)) ended++;
    return ended;
  }

  /** Ends every lease (the cache is closing). */
  clear(): void {
    for (const id of [...this.#held.keys()]) this.end(id);
  }

  get size(): number {
    return this.#held.size;
  }

  /** Blocks held by leases now (counted once per lease that holds them). */
  get blocks(): number {
    return this.#blocks;
  }
}
