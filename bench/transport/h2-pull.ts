/**
 * The floors under the cache in the transport bench, each its own process on the client CPU set:
 * `node` pulls the ranges with node:http2 alone (a session, a stream per range, each chunk
 * dropped), `undici` with an undici Pool over HTTP/2 set up as the cache's (same windows), each
 * chunk handed to a dispatch handler and dropped. Between them and the cache lie undici's
 * dispatch and the cache's own work (the copy into the pull buffer, CRC, slab writes).
 * Same warm-up and measure as cache-pull.ts; prints one JSON line (PullResult).
 *
 *   node dist/bench/transport/h2-pull.js '<json of H2PullJob>'
 */
import { connect, type ClientHttp2Session } from "node:http2";
import { Pool, type Dispatcher } from "undici";
import type { PullRange, PullResult } from "./ranges.js";

export interface H2PullJob {
  readonly client: "node" | "undici";
  readonly upstream: string;
  readonly ca: string;
  readonly concurrency: number;
  readonly warmup: readonly PullRange[];
  readonly ranges: readonly PullRange[];
}

const job = JSON.parse(process.argv[2] ?? "null") as H2PullJob;
if (!job?.upstream) throw new Error("Expected an H2PullJob as JSON in the first argument");

type Get = (r: PullRange) => Promise<number>;

async function nodeClient(): Promise<{ get: Get; close: () => Promise<void> }> {
  const session: ClientHttp2Session = connect(job.upstream, { ca: job.ca, settings: { initialWindowSize: 8 << 20 } });
  await new Promise<void>((resolve, reject) => session.once("remoteSettings", () => resolve()).once("error", reject));
  session.setLocalWindowSize(64 << 20);
  const get: Get = (r) =>
    new Promise((resolve, reject) => {
      const s = session.request({ ":path": r.path, range: `bytes=${r.offset}-${r.offset + r.length - 1}` });
      let n = 0;
      s.on("data", (c: Buffer) => void (n += c.length));
      s.on("end", () => resolve(n)).on("error", reject);
    });
  return { get, close: () => new Promise((r) => session.close(() => r())) };
}

class Drop implements Dispatcher.DispatchHandler {
  n = 0;
  readonly done: Promise<number>;
  #settle!: { resolve: (n: number) => void; reject: (e: unknown) => void };
  constructor() {
    this.done = new Promise((resolve, reject) => (this.#settle = { resolve, reject }));
  }
  onRequestStart(): void {}
  onResponseStart(): void {}
  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.n += chunk.length;
  }
  onResponseEnd(): void {
    this.#settle.resolve(this.n);
  }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.#settle.reject(err);
  }
}

async function undiciClient(): Promise<{ get: Get; close: () => Promise<void> }> {
  const pool = new Pool(job.upstream, {
    connections: 1,
    allowH2: true,
    maxConcurrentStreams: 100,
    initialWindowSize: 8 << 20,
    connectionWindowSize: 64 << 20,
    connect: { ca: job.ca },
  });
  pool.on("connect", (_o, targets) => {
    (targets[targets.length - 1] as unknown as { pipelining: number }).pipelining = 100;
  });
  const get: Get = (r) => {
    const h = new Drop();
    pool.dispatch(
      {
        origin: job.upstream,
        path: r.path,
        method: "GET",
        headers: { range: `bytes=${r.offset}-${r.offset + r.length - 1}` },
      },
      h,
    );
    return h.done;
  };
  return { get, close: () => pool.close() };
}

async function pull(get: Get, ranges: readonly PullRange[]): Promise<number> {
  let next = 0;
  let bytes = 0;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (next < ranges.length) {
        // Not `bytes += await …`: that reads `bytes` before the wait and loses the others' adds.
        const n = await get(ranges[next++] as PullRange);
        bytes += n;
      }
    }),
  );
  return bytes;
}

const c = await (job.client === "node" ? nodeClient() : undiciClient());
try {
  await pull(c.get, job.warmup);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const bytes = await pull(c.get, job.ranges);
  const seconds = (performance.now() - t0) / 1000;
  const u = process.cpuUsage(c0);
  const result: PullResult = { bytes, seconds, cpuSeconds: (u.user + u.system) / 1e6, requests: job.ranges.length };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await c.close();
}
