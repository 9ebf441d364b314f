/** A counting semaphore: the cap on upstream requests in flight across all origins. */
export class Limiter {
  readonly #max: number;
  readonly #waiting: (() => void)[] = [];
  #active = 0;
  #peak = 0;

  constructor(max: number) {
    this.#max = max;
  }

  async acquire(): Promise<() => void> {
    if (this.#active >= this.#max) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    this.#peak = Math.max(this.#peak, this.#active);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter, so `active` stays put.
      if (next) next();
      else this.#active--;
    };
  }

  get active(): number {
    return this.#active;
  }
  get peak(): number {
    return this.#peak;
  }
}
