/**
 * The store's free slots: taken lowest first (so slabs fill from the front), or one named slot
 * when it is free, so the blocks of one pull land side by side and go to disk in one write.
 * A flag per slot says whether it is free; the stack of candidates may hold slots taken by name
 * since, skipped when they come up.
 */
const FREE = 1;
const STACKED = 2;

export class FreeSlots {
  readonly #state: Uint8Array;
  readonly #stack: number[] = [];

  constructor(slots: number) {
    this.#state = new Uint8Array(slots);
  }

  /** Marks a slot free; the slot given last is taken first. */
  give(slot: number): void {
    const s = this.#state[slot] as number;
    this.#state[slot] = s | FREE | STACKED;
    if (!(s & STACKED)) this.#stack.push(slot);
  }

  /** The free slot given last (lowest first after a rebuild), or undefined when none is free. */
  take(): number | undefined {
    while (this.#stack.length > 0) {
      const slot = this.#stack.pop() as number;
      const s = (this.#state[slot] as number) & ~STACKED;
      this.#state[slot] = 0;
      if (s & FREE) return slot;
    }
    return undefined;
  }

  /** Takes `slot` if it is free. */
  takeIf(slot: number): boolean {
    const s = this.#state[slot];
    if (s === undefined || !(s & FREE)) return false;
    this.#state[slot] = s & ~FREE;
    return true;
  }
}
