/** R2 and queue calls one queue invocation made, by method: what counts against its 1,000 subrequests. */
export type CallCounts = Record<string, number>;

function counting<T extends object>(target: T, counts: CallCounts, prefix: string): T {
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const name = `${prefix}${String(prop)}`;
        counts[name] = (counts[name] ?? 0) + 1;
        return value.apply(t, args);
      };
    },
  });
}

/**
 * `env` with every call of the bucket and the queues counted (the bindings themselves, not
 * stand-ins), so that a publish invocation can say what it made against the Workers limit
 * rather than what its budget predicted.
 *
 * @example
 * const c = countedEnv(env); await publishTable(c.env, root); c.total(); // 31
 */
export function countedEnv(env: Env): { env: Env; counts: CallCounts; total: () => number } {
  const counts: CallCounts = {};
  return {
    env: {
      ...env,
      BUCKET: counting(env.BUCKET, counts, "r2."),
      INDEX_QUEUE: counting(env.INDEX_QUEUE, counts, "queue."),
      PUBLISH_QUEUE: counting(env.PUBLISH_QUEUE, counts, "queue."),
    },
    counts,
    total: () => Object.values(counts).reduce((s, n) => s + n, 0),
  };
}
