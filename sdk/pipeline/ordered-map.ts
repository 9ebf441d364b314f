/**
 * Maps an iterable with up to `window` calls in flight, yielding results in input order.
 * Nothing is started beyond the window until the consumer pulls: this is the pipeline's
 * backpressure, so memory is bounded by `window` results whatever the input's length. A consumer
 * that stops early (break, throw) returns once the calls in flight have settled: nothing it
 * started still runs (and reads) after it closed what those calls use.
 *
 * @example
 * for await (const r of orderedMap(urls, 8, fetchOne)) use(r);
 */
export async function* orderedMap<T, R>(
  input: Iterable<T>,
  window: number,
  fn: (item: T) => Promise<R>,
): AsyncGenerator<R> {
  const it = input[Symbol.iterator]();
  const inFlight: Promise<R>[] = [];
  let done = false;
  const fill = () => {
    while (!done && inFlight.length < window) {
      const next = it.next();
      if (next.done) {
        done = true;
        break;
      }
      const p = fn(next.value);
      // Rejections are awaited in order below; this keeps an early one from being reported as unhandled.
      p.catch(() => undefined);
      inFlight.push(p);
    }
  };
  try {
    fill();
    while (inFlight.length > 0) {
      const result = await inFlight.shift()!;
      fill();
      yield result;
    }
  } finally {
    await Promise.allSettled(inFlight);
  }
}
