/**
 * One upstream client per origin. HTTP/2 is offered over TLS and used where the upstream agrees
 * (ALPN): on undici's Pool by default, on node:http2 directly (`client: "node-http2"`,
 * h2-origin.ts), or on libcurl in the addon (`client: "native"`, native-origin.ts, which takes
 * plain http origins too, over HTTP/1.1); otherwise HTTP/1.1 keep-alive over several sockets
 * (undici). The negotiated protocol is recorded per origin so stats can say what was actually
 * used, and the requests each client sent, so they can say which client pulled.
 */
import type { ConnectionOptions } from "node:tls";
import { Pool, buildConnector, type Dispatcher } from "undici";
import { CacheArgumentError, UpstreamClientUnavailableError } from "../errors.js";
import { type Dispatch, H2Origin } from "./h2-origin.js";
import { NativeClient, NativeOrigin } from "./native-origin.js";

export type { Dispatch };

/** The HTTP/2 client of https origins: libcurl in the addon, node:http2 directly, or undici's. */
export type UpstreamClient = "native" | "node-http2" | "undici";

/** The CA option as one PEM text, for the native client. */
function pem(ca: ConnectionOptions["ca"]): string | undefined {
  if (ca === undefined) return undefined;
  const all = Array.isArray(ca) ? ca : [ca];
  return all.map((c) => (typeof c === "string" ? c : Buffer.from(c).toString("utf8"))).join("\n");
}

/** Counts the requests a dispatcher sends, under its client's name. */
function counted(d: Dispatch, count: () => void): Dispatch {
  return {
    dispatch(opts, handler) {
      count();
      return d.dispatch(opts, handler);
    },
  };
}

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
  readonly #pools = new Map<string, Pool | H2Origin | NativeOrigin>();
  /** What `get` hands out: each origin's client, counting its requests. */
  readonly #dispatchers = new Map<string, Dispatch>();
  readonly #versions = new Map<string, HttpVersion>();
  readonly #requests: Record<string, number> = {};
  readonly #fallbacks: Pool[] = [];
  readonly #opts: PoolOptions;
  readonly #native: NativeClient | undefined;

  /** Throws ERR_UPSTREAM_CLIENT_UNAVAILABLE for `client: "native"` where libcurl does not load. */
  constructor(origins: readonly string[], opts: PoolOptions) {
    this.#opts = opts;
    if (opts.client === "native") this.#native = this.#openNative();
    for (const origin of origins) {
      if (this.#native) {
        const o = new NativeOrigin(this.#native, origin);
        this.#pools.set(origin, o);
        this.#dispatchers.set(origin, o);
        continue;
      }
      const h2 = opts.client === "node-http2" && new URL(origin).protocol === "https:";
      const pool = h2 ? this.#h2(origin) : this.#create(origin);
      const name = h2 ? "node-http2" : "undici";
      this.#pools.set(origin, pool);
      this.#dispatchers.set(
        origin,
        counted(pool, () => this.#count(name)),
      );
    }
  }

  #count(client: UpstreamClient): void {
    this.#requests[client] = (this.#requests[client] ?? 0) + 1;
  }

  #openNative(): NativeClient {
    const o = this.#opts;
    if (o.tls?.servername !== undefined)
      throw new CacheArgumentError(
        `Expected no tls.servername with upstreamClient "native" but received ${JSON.stringify(o.tls.servername)}; use upstreamClient "undici" for it`,
      );
    const ca = pem(o.tls?.ca);
    try {
      return new NativeClient({
        connections: o.connections,
        streamsPerConnection: o.streamsPerConnection,
        headersTimeoutMs: o.headersTimeoutMs,
        bodyTimeoutMs: o.bodyTimeoutMs,
        connectTimeoutMs: o.connectTimeoutMs,
        ...(ca !== undefined ? { ca } : {}),
        verify: o.tls?.rejectUnauthorized !== false,
        onVersion: (origin, v) => this.#versions.set(origin, v),
        onRequest: () => this.#count("native"),
      });
    } catch (err) {
      throw new UpstreamClientUnavailableError((err as Error).message, { cause: err });
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
    const d = this.#dispatchers.get(origin);
    if (!d) throw new Error(`no pool for ${origin}`);
    return d;
  }

  /** Protocol per origin that has connected at least once. */
  versions(): Record<string, HttpVersion> {
    return Object.fromEntries(this.#versions);
  }

  /** Requests sent upstream by each client (every try and hedge, probes included). */
  requests(): Record<string, number> {
    return { ...this.#requests };
  }

  async close(): Promise<void> {
    this.#native?.close();
    await Promise.all([
      ...[...this.#pools.values()].map((p) =>
        p instanceof H2Origin ? p.close() : p instanceof NativeOrigin ? undefined : p.destroy(),
      ),
      ...this.#fallbacks.map((p) => p.destroy()),
    ]);
  }
}
