/**
 * One upstream client per origin. HTTP/2 is offered over TLS and used where the upstream agrees
 * (ALPN): on undici's Pool by default, or on node:http2 directly (`client: "node-http2"`,
 * h2-origin.ts); otherwise HTTP/1.1 keep-alive over several sockets (undici). The negotiated
 * protocol is recorded per origin so stats can say what was actually used.
 */
import type { ConnectionOptions } from "node:tls";
import { Pool, buildConnector, type Dispatcher } from "undici";
import { type Dispatch, H2Origin } from "./h2-origin.js";

export type { Dispatch };

/** The HTTP/2 client of https origins: node:http2 directly, or undici's. */
export type UpstreamClient = "node-http2" | "undici";

export interface PoolOptions {
  /** HTTP/1.1 sockets per origin; an HTTP/2 origin multiplexes streams over few connections. */
  readonly connections: number;
  /** Streams per HTTP/2 connection before the pool opens another. */
  readonly streamsPerConnection: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly tls?: Pick<ConnectionOptions, "ca" | "rejectUnauthorized" | "servername">;
  /** Default "undici"; plain http origins are always undici's (HTTP/1.1). */
  readonly client?: UpstreamClient;
}

export type HttpVersion = "h2" | "http/1.1";

export class UpstreamPools {
  readonly #pools = new Map<string, Pool | H2Origin>();
  readonly #versions = new Map<string, HttpVersion>();
  readonly #fallbacks: Pool[] = [];
  readonly #opts: PoolOptions;

  constructor(origins: readonly string[], opts: PoolOptions) {
    this.#opts = opts;
    for (const origin of origins) {
      const h2 = opts.client === "node-http2" && new URL(origin).protocol === "https:";
      this.#pools.set(origin, h2 ? this.#h2(origin) : this.#create(origin));
    }
  }

  #h2(origin: string): H2Origin {
    const o = this.#opts;
    return new H2Origin(origin, {
      streamsPerConnection: o.streamsPerConnection,
      headersTimeoutMs: o.headersTimeoutMs,
      bodyTimeoutMs: o.bodyTimeoutMs,
      connectTimeoutMs: o.connectTimeoutMs,
      ...(o.tls ? { tls: o.tls } : {}),
      onVersion: (v) => this.#versions.set(origin, v),
      // Asked once, when the origin answers without h2; every request after goes to it.
      fallback: () => {
        const pool = this.#create(origin);
        this.#fallbacks.push(pool);
        return pool;
      },
    });
  }

  #create(origin: string): Pool {
    const o = this.#opts;
    const base = buildConnector({ ...o.tls, allowH2: true, timeout: o.connectTimeoutMs });
    const pool = new Pool(origin, {
      connections: o.connections,
      allowH2: true,
      maxConcurrentStreams: o.streamsPerConnection,
      // Undici's windows (256 KiB stream, 512 KiB connection) cap one connection at ~10 MB/s
      // over a 50 ms WAN; these cover a few hundred Mbit/s per stream and per connection.
      initialWindowSize: 8 << 20,
      connectionWindowSize: 64 << 20,
      headersTimeout: o.headersTimeoutMs,
      bodyTimeout: o.bodyTimeoutMs,
      keepAliveTimeout: 30_000,
      connect: (opts, cb) =>
        base(opts, (err, socket) => {
          if (socket)
            this.#versions.set(
              origin,
              (socket as { alpnProtocol?: string | false }).alpnProtocol === "h2" ? "h2" : "http/1.1",
            );
          cb(err as Error, socket as never);
        }),
    });
    // Undici runs one request at a time per client unless told otherwise; an HTTP/2 client may
    // carry many streams, an HTTP/1.1 one must not pipeline (a reset would take all with it).
    pool.on("connect", (_origin, targets) => {
      const client = targets[targets.length - 1] as Dispatcher & { pipelining: number };
      if (this.#versions.get(origin) === "h2") client.pipelining = o.streamsPerConnection;
    });
    return pool;
  }

  get(origin: string): Dispatch {
    const pool = this.#pools.get(origin);
    if (!pool) throw new Error(`no pool for ${origin}`);
    return pool;
  }

  /** Protocol per origin that has connected at least once. */
  versions(): Record<string, HttpVersion> {
    return Object.fromEntries(this.#versions);
  }

  async close(): Promise<void> {
    await Promise.all([
      ...[...this.#pools.values()].map((p) => (p instanceof H2Origin ? p.close() : p.destroy())),
      ...this.#fallbacks.map((p) => p.destroy()),
    ]);
  }
}
