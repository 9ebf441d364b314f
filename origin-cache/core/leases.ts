/**
 * Leases of the local data plane: while one is held, the slots it names stay where they are (no
 * eviction, no reuse); it ends when its holder releases it or, for a holder that went away
 * (killed, hung), when it expires.
 */
import { randomUUID } from "node:crypto";
import type { Lease } from "../../common/schema/cache-locate.js";

interface Held {
  readonly release: () => void;
  readonly timer: NodeJS.Timeout;
  /** The client it was granted to, where the request named one. */
  readonly owner: string | undefined;
}

export class Leases {
  readonly #held = new Map<string, Held>();

  /** A lease over what `release` lets go (granted to `owner`, if named), ended by `end(id)` or after `ms`. */
  grant(release: () => void, ms: number, owner?: string): Lease {
    const id = randomUUID();
    const timer = setTimeout(() => this.end(id), ms);
    timer.unref();
    this.#held.set(id, { release, timer, owner });
    return { id, expiresAt: Date.now() + ms };
  }

  /** Ends a lease; false when there is none by that id (ended, expired, or never granted). */
  end(id: string): boolean {
    const h = this.#held.get(id);
    if (!h) return false;
    this.#held.delete(id);
    clearTimeout(h.timer);
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
}
