/**
 * The upstream client of one https origin on node:http2 directly: a ClientHttp2Session (more
 * when one carries `streamsPerConnection` streams), each request a stream whose 'data' chunks go
 * straight to the dispatch handler (an Answer). It speaks undici's dispatch-handler interface, so
 * the Answer, hedging, retries and ETag pinning above it are the same as on undici; undici's
 * HTTP/2 client sits on node:http2 too, and its layer over it cost as much CPU per GB as node's
 * own receive (bench/README.md, Transport). An origin whose TLS handshake does not pick h2 (ALPN)
 * goes to `fallback` (an undici Pool, HTTP/1.1 keep-alive), as does every request after it.
 */
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  constants,
  connect as h2connect,
  type IncomingHttpHeaders,
} from "node:http2";
import { isIP } from "node:net";
import { type ConnectionOptions, connect as tlsConnect, type TLSSocket } from "node:tls";
import type { Dispatcher } from "undici";

/** What the Answer needs of a client: undici's `dispatch`. */
export interface Dispatch {
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean;
}

export interface H2OriginOptions {
  readonly streamsPerConnection: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly tls?: Pick<ConnectionOptions, "ca" | "rejectUnauthorized" | "servername">;
  /** The protocol ALPN picked, once per connection. */
  readonly onVersion: (version: "h2" | "http/1.1") => void;
  /** The client for an origin that does not speak h2; made once, on the first such handshake. */
  readonly fallback: () => Dispatch;
}

/** A stream's receive window (as the undici pool's): a few hundred Mbit/s over a 50 ms WAN. */
const STREAM_WINDOW = 8 << 20;
const CONNECTION_WINDOW = 64 << 20;
/** The largest DATA frame the server may send (RFC 9113 §6.5.2: 2^24 - 1); fewer frames a MiB where it obliges. */
const MAX_FRAME = (1 << 24) - 1;
/** nghttp2's bound on what a session may buffer, in MB (node's default 10 is less than one connection window). */
const SESSION_MEMORY_MB = 256;
/** An idle connection is closed after this long, as the undici pool's keep-alive. */
const IDLE_MS = 30_000;

function coded(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

interface Connection {
  readonly session: ClientHttp2Session;
  active: number;
  /** False once the session had a GOAWAY, an error or began to close: no new streams on it. */
  usable: boolean;
}

interface Pending {
  readonly opts: Dispatcher.DispatchOptions;
  readonly handler: Dispatcher.DispatchHandler;
}

/** The controller a handler gets: `abort` cancels the stream and fails the answer with the reason. */
interface Controller {
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: Error | null;
}

export class H2Origin implements Dispatch {
  readonly #origin: string;
  readonly #url: URL;
  readonly #opts: H2OriginOptions;
  readonly #conns: Connection[] = [];
  #queue: Pending[] = [];
  #connecting = false;
  #fallback: Dispatch | undefined;
  #closed = false;

  constructor(origin: string, opts: H2OriginOptions) {
    this.#origin = origin;
    this.#url = new URL(origin);
    this.#opts = opts;
  }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (this.#fallback) return this.#fallback.dispatch(opts, handler);
    if (this.#closed) {
      fail(handler, coded("the upstream client is closed", "UND_ERR_DESTROYED"));
      return true;
    }
    const conn = this.#pick();
    if (conn) this.#send(conn, opts, handler);
    else {
      this.#queue.push({ opts, handler });
      this.#connect();
    }
    return true;
  }

  /** The first open connection with room for another stream. */
  #pick(): Connection | undefined {
    for (const c of this.#conns)
      if (c.usable && !c.session.closed && !c.session.destroyed && c.active < this.#opts.streamsPerConnection) return c;
    return undefined;
  }

  #connect(): void {
    if (this.#connecting) return;
    this.#connecting = true;
    const { tls, connectTimeoutMs } = this.#opts;
    const host = this.#url.hostname.replace(/^\[|\]$/g, "");
    const servername = tls?.servername ?? (isIP(host) ? undefined : host);
    const socket: TLSSocket = tlsConnect({
      host,
      port: Number(this.#url.port || 443),
      ...(tls?.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls?.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
      ...(servername ? { servername } : {}),
      ALPNProtocols: ["h2", "http/1.1"],
    });
    const timer = setTimeout(
      () => socket.destroy(coded(`connect to ${this.#origin} timed out`, "UND_ERR_CONNECT_TIMEOUT")),
      connectTimeoutMs,
    );
    const onError = (err: Error): void => {
      clearTimeout(timer);
      this.#connecting = false;
      const queue = this.#queue;
      this.#queue = [];
      for (const p of queue) fail(p.handler, err);
    };
    socket.once("error", onError);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      socket.off("error", onError);
      this.#connecting = false;
      if (this.#closed) {
        socket.destroy();
        return onError(coded("the upstream client is closed", "UND_ERR_DESTROYED"));
      }
      if (socket.alpnProtocol !== "h2") {
        this.#opts.onVersion("http/1.1");
        socket.destroy();
        this.#fallback = this.#opts.fallback();
      } else {
        this.#opts.onVersion("h2");
        this.#conns.push(this.#open(socket));
      }
      const queue = this.#queue;
      this.#queue = [];
      for (const p of queue) this.dispatch(p.opts, p.handler);
    });
  }

  #open(socket: TLSSocket): Connection {
    const session = h2connect(this.#origin, {
      createConnection: () => socket,
      settings: { initialWindowSize: STREAM_WINDOW, maxFrameSize: MAX_FRAME, enablePush: false },
      maxSessionMemory: SESSION_MEMORY_MB,
    });
    const conn: Connection = { session, active: 0, usable: true };
    const retire = (): void => {
      conn.usable = false;
      const i = this.#conns.indexOf(conn);
      if (i >= 0) this.#conns.splice(i, 1);
    };
    session.setLocalWindowSize(CONNECTION_WINDOW);
    // Its streams hear the failure; the session's own error must not go unheard.
    session.on("error", retire);
    session.on("goaway", retire);
    session.on("close", retire);
    session.setTimeout(IDLE_MS, () => {
      if (conn.active === 0) {
        retire();
        session.close();
      }
    });
    session.unref();
    return conn;
  }

  #send(conn: Connection, opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): void {
    const { session } = conn;
    let stream: ClientHttp2Stream | undefined;
    let settled = false;
    let reason: Error | null = null;
    const controller: Controller = {
      abort: (err) => {
        if (settled) return;
        reason = err;
        settle();
        stream?.close(constants.NGHTTP2_CANCEL);
        handler.onResponseError?.(controller as never, err);
      },
      pause: () => stream?.pause(),
      resume: () => stream?.resume(),
      get aborted() {
        return reason !== null;
      },
      get paused() {
        return stream?.isPaused() ?? false;
      },
      get reason() {
        return reason;
      },
    };
    const settle = (): void => {
      if (settled) return;
      settled = true;
      if (--conn.active === 0) session.unref();
    };
    const failWith = (err: Error): void => {
      if (settled) return;
      settle();
      stream?.close(constants.NGHTTP2_CANCEL);
      handler.onResponseError?.(controller as never, err);
    };
    if (conn.active++ === 0) session.ref();
    try {
      stream = session.request(
        { ...(opts.headers as Record<string, string>), ":method": opts.method, ":path": opts.path },
        { endStream: true },
      );
    } catch (err) {
      handler.onRequestStart?.(controller as never, {});
      failWith(err as Error);
      return;
    }
    handler.onRequestStart?.(controller as never, {});
    if (settled) return;
    const s = stream;
    s.setTimeout(this.#opts.headersTimeoutMs, () =>
      failWith(coded(`no response headers from ${this.#origin} in time`, "UND_ERR_HEADERS_TIMEOUT")),
    );
    let responded = false;
    s.on("response", (headers: IncomingHttpHeaders) => {
      if (settled) return;
      responded = true;
      const status = Number(headers[":status"]);
      delete headers[":status"];
      s.setTimeout(this.#opts.bodyTimeoutMs, () =>
        failWith(coded(`the body from ${this.#origin} stalled`, "UND_ERR_BODY_TIMEOUT")),
      );
      handler.onResponseStart?.(controller as never, status, headers, "");
    });
    s.on("data", (chunk: Buffer) => {
      if (!settled) handler.onResponseData?.(controller as never, chunk);
    });
    // node ends the readable side of a stream that closed early too (a reset, the session's
    // end): only an end after the response, without an error code, is the body's end.
    s.on("end", () => {
      if (settled) return;
      if (!responded || (s.rstCode !== undefined && s.rstCode !== constants.NGHTTP2_NO_ERROR))
        return failWith(closedEarly(s));
      settle();
      handler.onResponseEnd?.(controller as never, {});
    });
    s.on("error", failWith);
    s.on("close", () => {
      if (!settled) failWith(closedEarly(s));
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const queue = this.#queue;
    this.#queue = [];
    for (const p of queue) fail(p.handler, coded("the upstream client is closed", "UND_ERR_DESTROYED"));
    for (const c of [...this.#conns]) {
      c.usable = false;
      c.session.destroy();
    }
    this.#conns.length = 0;
  }
}

function closedEarly(s: ClientHttp2Stream): Error {
  return coded(`the stream closed before its end (code ${s.rstCode ?? "none"})`, "ERR_HTTP2_STREAM_ERROR");
}

/** Fails a request that never got a stream. */
function fail(handler: Dispatcher.DispatchHandler, err: Error): void {
  const controller = { abort() {}, pause() {}, resume() {}, aborted: true, paused: false, reason: err };
  handler.onRequestStart?.(controller as never, {});
  handler.onResponseError?.(controller as never, err);
}
