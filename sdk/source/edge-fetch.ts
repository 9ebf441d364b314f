/**
 * The fetch an EdgeSource sends its control requests with (keys, table head and pages, signed
 * URLs), cheaper at open than Node's global fetch for a table of many pages (bench/open-scale.ts):
 * HTTP/2 where the edge offers it, so the pages in flight share one connection instead of a TLS
 * handshake each; and a gzip body (every table page) inflated in one call on libuv's thread
 * pool, instead of fetch's streamed decompression chunk by chunk on the main thread.
 */
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { Agent, buildConnector, getGlobalDispatcher, request, type Dispatcher } from "undici";

const inflate = promisify(gunzip);

/** A gzip body inflated in one call on libuv's thread pool, one output chunk per MiB (a page inflates to ~180 KB per 1,000 objects). */
export const inflateBody = async (gz: Uint8Array): Promise<Uint8Array<ArrayBuffer>> =>
  new Uint8Array(await inflate(gz, { chunkSize: 1 << 20 }));

/**
 * Streams in flight on one HTTP/2 connection: the table reader keeps 64 pages in flight. Undici
 * runs one request at a time per connection unless told otherwise, and then opens a connection
 * (a TLS handshake and one more RTT) per page in flight instead of sharing one.
 */
const STREAMS_PER_CONNECTION = 128;

/** Statuses whose Response cannot carry a body. */
const NO_BODY = new Set([101, 103, 204, 205, 304]);

export interface EdgeFetch {
  readonly fetch: typeof fetch;
  close(): Promise<void>;
}

/**
 * `connect`: TLS options of the connections (a test's own CA); the system's trust otherwise.
 * A process whose global dispatcher is a user's (set for a proxy or a CA) keeps it: requests go
 * through it, HTTP/1.1 unless it allows HTTP/2; undici's own default is not a user's
 * (`ownsDispatcher`).
 *
 * @example
 * const f = edgeFetch();
 * await fetchTable(url, { token, fetch: f.fetch });
 * await f.close();
 */
export function edgeFetch(connect?: buildConnector.BuildOptions): EdgeFetch {
  const own = ownsDispatcher(connect) ? h2Agent(connect) : undefined;
  const dispatcher: Dispatcher = own ?? getGlobalDispatcher();
  const send = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const res = await request(String(input instanceof Request ? input.url : input), {
      method: (init.method ?? "GET") as "GET",
      headers: init.headers as Record<string, string> | undefined,
      body: init.body as string | undefined,
      signal: init.signal ?? undefined,
      dispatcher,
    });
    const raw = new Uint8Array(await res.body.arrayBuffer());
    const gzip = res.headers["content-encoding"] === "gzip";
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined || (gzip && (k === "content-encoding" || k === "content-length"))) continue;
      for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
    }
    const body: Uint8Array<ArrayBuffer> | null = NO_BODY.has(res.statusCode)
      ? null
      : gzip
        ? await inflateBody(raw)
        : raw;
    return new Response(body, { status: res.statusCode, headers });
  };
  return { fetch: send as typeof fetch, close: async () => own?.close() };
}

/**
 * Whether edgeFetch sends through an agent of its own: with TLS options of its caller, or where
 * the process's global dispatcher is nobody's choice: the option-less Agent that undici (ours,
 * or Node's own for fetch) installs the moment it is loaded, unless one is set already. The
 * import above guarantees a global dispatcher, so its presence alone says nothing of a user's
 * proxy or CA; a dispatcher made with options, composed with interceptors or of another
 * class is theirs, and kept.
 */
export function ownsDispatcher(connect?: buildConnector.BuildOptions): boolean {
  return connect !== undefined || isDefaultAgent(getGlobalDispatcher());
}

/**
 * Undici's `new Agent()` with no options: an Agent whose options, kept under its `options`
 * symbol, are the defaults alone (no connect or TLS options, no limit of origins).
 */
function isDefaultAgent(d: unknown): boolean {
  if (typeof d !== "object" || d === null || d.constructor?.name !== "Agent") return false;
  // compose() answers with a Proxy of the agent whose dispatch alone is the interceptors'.
  const { dispatch } = d as { dispatch?: unknown };
  if (dispatch !== (Object.getPrototypeOf(d) as { dispatch?: unknown }).dispatch) return false;
  const key = Object.getOwnPropertySymbols(d).find((s) => s.description === "options");
  const options = key === undefined ? undefined : (d as Record<symbol, unknown>)[key];
  if (typeof options !== "object" || options === null) return false;
  return Object.entries(options).every(([k, v]) => v === undefined || (k === "maxOrigins" && v === Infinity));
}

/**
 * An agent that offers HTTP/2 and, on a connection that took it (ALPN), carries many requests
 * at once; an HTTP/1.1 connection keeps one at a time (no pipelining).
 */
export function h2Agent(connect?: buildConnector.BuildOptions): Agent {
  const base = buildConnector({ ...connect, allowH2: true });
  // Per origin (protocol//host): every connection to one edge negotiates the same protocol.
  const h2 = new Set<string>();
  const agent = new Agent({
    allowH2: true,
    keepAliveTimeout: 30_000,
    connect: (opts, cb) =>
      base(opts, (err, socket) => {
        if (socket && (socket as { alpnProtocol?: string | false }).alpnProtocol === "h2")
          h2.add(`${opts.protocol}//${opts.host}`);
        cb(err as Error, socket as never);
      }),
  });
  agent.on("connect", (origin, targets) => {
    const client = targets[targets.length - 1] as Dispatcher & { pipelining: number };
    if (h2.has(`${origin.protocol}//${origin.host}`)) client.pipelining = STREAMS_PER_CONNECTION;
  });
  return agent;
}
