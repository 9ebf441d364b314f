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
}

export class Leases {
  readonly #held = new Map<string, Held>();

  /** A lease over what `release` lets go, ended by `end(id)` or after `ms`. */
  grant(release: () => void, ms: number): Lease {
    const id = randomUUID();
    const timer = setTimeout(() => this.end(id), ms);
    timer.unref();
    this.#held.set(id, { release, timer });
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

  /** Ends every lease (the cache is closing). */
  clear(): void {
    for (const id of [...this.#held.keys()]) this.end(id);
  }

  get size(): number {
    return this.#held.size;
  }
}
