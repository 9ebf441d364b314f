/** Concurrent callers asking for the same key share one in-progress call. */
export class SingleFlight<T> {
  readonly #inFlight = new Map<string, Promise<T>>();

  /** Runs `fn` unless a call for `key` is already running; `shared` tells the caller it joined one. */
  do(key: string, fn: () => Promise<T>): { promise: Promise<T>; shared: boolean } {
    const running = this.#inFlight.get(key);
    if (running) return { promise: running, shared: true };
    const promise = fn().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, promise);
    return { promise, shared: false };
  }

  /** The call in progress for `key`, if any. */
  get(key: string): Promise<T> | undefined {
    return this.#inFlight.get(key);
  }

  get size(): number {
    return this.#inFlight.size;
  }
}
