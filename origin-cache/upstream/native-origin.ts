/**
 * The native upstream client (`upstreamClient: "native"`): HTTP/2 and TLS in the addon, on
 * libcurl's multi interface, on a thread of its own (native/src/range-client.h). A pull's body
 * goes straight into its buffer there; JS hears one headers event, a progress event per
 * `notifyEvery` bytes (a block) and one completion per request, so no Buffer, promise or call per
 * 8–16 KiB chunk reaches V8. Every decision stays here and above: which ranges, If-Match, retries,
 * hedging, metrics. The addon only gates the body on what was asked (206 of exactly the range, or
 * a 200 of the whole object, with the pinned ETag or none): an answer that is not that keeps its
 * first bytes aside for the checks above (range-fetch.ts) to read.
 *
 * Other requests (the one-byte probes that pin an object) go through `dispatch`, undici's
 * handler interface, with their body kept in the addon and handed over whole at the end.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import { openRangeClient, type RangeClient, type RangeEvent, type RangeExtra, rangeEvent } from "../../native/index.js";
import { UpstreamTransportError } from "../errors.js";
import type { Dispatch } from "./h2-origin.js";
import { TransientUpstreamError } from "./retry.js";

export interface NativeClientOptions {
  readonly connections: number;
  readonly streamsPerConnection: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** PEM of the CA (or CAs) to trust; absent: the system's. */
  readonly ca?: string;
  readonly verify: boolean;
  /** The protocol of an answer of `origin`. */
  readonly onVersion: (origin: string, version: "h2" | "http/1.1") => void;
  /** A request went out (each try and each hedge). */
  readonly onRequest?: () => void;
}

/** Bytes of a dispatched answer's body the addon keeps (a probe's is one byte; a refusal's a few KiB). */
const DISPATCH_BODY = 1 << 20;
/** Bytes kept of an answer to a pull that is not the range asked for: what range-fetch reads of a refusal. */
const REFUSED_BODY = 64 << 10;

/** Node's and undici's codes for the same failures, so that retries treat them alike. */
const TRANSPORT_CODES: Readonly<Record<string, string>> = {
  reset: "ECONNRESET",
  connect: "ECONNREFUSED",
  "connect-timeout": "UND_ERR_CONNECT_TIMEOUT",
  "headers-timeout": "UND_ERR_HEADERS_TIMEOUT",
  "body-timeout": "UND_ERR_BODY_TIMEOUT",
  timeout: "ETIMEDOUT",
  resolve: "ENOTFOUND",
  aborted: "UND_ERR_ABORTED",
  closed: "UND_ERR_DESTROYED",
};

function transportError(e: { error?: string; message?: string }): Error {
  const kind = e.error ?? "other";
  return new UpstreamTransportError(
    TRANSPORT_CODES[kind] ?? "ERR_UPSTREAM_TRANSPORT",
    `the native upstream client failed (${kind}): ${e.message ?? kind}`,
  );
}

function headersOf(e: RangeEvent): IncomingHttpHeaders {
  const h: IncomingHttpHeaders = {};
  if (e.etag !== undefined) h.etag = e.etag;
  if (e.contentRange !== undefined) h["content-range"] = e.contentRange;
  if (e.contentLength !== undefined) h["content-length"] = e.contentLength;
  if (e.contentType !== undefined) h["content-type"] = e.contentType;
  return h;
}

/** What one request hears, on the main thread, in order: headers (unless it failed first), progress, done. */
interface Live {
  /** Keeps the destination alive while the addon may write into it. */
  readonly dest: Buffer | null;
  onHeaders(e: RangeEvent): void;
  onProgress(bytes: number): void;
  onDone(e: RangeEvent): void;
}

/** One addon client (one thread, one libcurl multi handle) for every origin of a cache. */
export class NativeClient {
  readonly #raw: RangeClient;
  readonly #live = new Map<number, { readonly live: Live; readonly origin: string }>();
  readonly #opts: NativeClientOptions;
  #next = 0;
  #closed = false;

  /** Throws ERR_LIBCURL_UNAVAILABLE (a NativeError) where libcurl does not load. */
  constructor(opts: NativeClientOptions) {
    this.#opts = opts;
    this.#raw = openRangeClient(
      {
        connections: opts.connections,
        streamsPerConnection: opts.streamsPerConnection,
        connectTimeoutMs: opts.connectTimeoutMs,
        headersTimeoutMs: opts.headersTimeoutMs,
        bodyTimeoutMs: opts.bodyTimeoutMs,
        ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
        verify: opts.verify,
      },
      (nums, extras) => this.#hear(nums, extras),
    );
  }

  /** Sends a GET; returns its id (for `abort`). */
  start(
    origin: string,
    path: string,
    headers: Record<string, string>,
    live: Live,
    range?: { from: number; to: number; size: number; etag: string; notifyEvery: number },
  ): number {
    if (this.#closed) {
      queueMicrotask(() => live.onDone({ id: 0, kind: 2, bytes: 0, error: "closed", message: "the client is closed" }));
      return 0;
    }
    this.#opts.onRequest?.();
    this.#next = this.#next >= 0xffff_fffe ? 1 : this.#next + 1;
    const id = this.#next;
    const lines: string[] = [];
    for (const name in headers) lines.push(`${name}: ${headers[name]}`);
    if (this.#live.size === 0) this.#raw.ref();
    this.#live.set(id, { live, origin });
    this.#raw.start(
      id,
      origin + path,
      lines,
      live.dest,
      range?.from ?? -1,
      range?.to ?? -1,
      range?.size ?? -1,
      range?.etag ?? "",
      range?.notifyEvery ?? 0,
      live.dest ? REFUSED_BODY : DISPATCH_BODY,
    );
    return id;
  }

  /** Once this returns, the addon writes nothing more into the request's destination. */
  abort(id: number): void {
    if (this.#live.has(id)) this.#raw.abort(id);
  }

  #hear(nums: Float64Array, extras: (RangeExtra | undefined)[]): void {
    for (let i = 0; i < nums.length / 4; i++) {
      const id = nums[4 * i] as number;
      const entry = this.#live.get(id);
      if (!entry) continue;
      const kind = nums[4 * i + 1];
      // A progress report, most of a batch, makes no object.
      if (kind === 1) {
        entry.live.onProgress(nums[4 * i + 2] as number);
        continue;
      }
      const e = rangeEvent(nums, extras, i);
      if (kind === 0) {
        this.#opts.onVersion(entry.origin, e.h2 ? "h2" : "http/1.1");
        entry.live.onHeaders(e);
      } else {
        this.#live.delete(id);
        if (this.#live.size === 0) this.#raw.unref();
        entry.live.onDone(e);
      }
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#raw.close();
    const live = [...this.#live.values()];
    this.#live.clear();
    for (const { live: l } of live)
      l.onDone({ id: 0, kind: 2, bytes: 0, error: "closed", message: "the client is closed" });
  }
}

/** A ranged GET whose body the addon writes into `out` from `at`; see fetchRange. */
export interface ReceiveRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly out: Buffer;
  readonly at: number;
  /** The object's bytes asked for: `from` to `to`, inclusive; `size` and `etag` of the pin. */
  readonly from: number;
  readonly to: number;
  readonly size: number;
  readonly etag: string;
  /** A progress report each time this many more bytes are in (a block); 0: only at the end. */
  readonly notifyEvery: number;
}

function abortError(reason: unknown): Error {
  return reason instanceof Error ? reason : Object.assign(new Error("request aborted"), { name: "AbortError" });
}

/**
 * One native pull: `started` settles with it at its headers (or with its failure), `fill` once
 * its body is in. Bytes before the count `fill` reports never change.
 */
export class Reception implements Live {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  /** The body goes into `out` (the answer is the range asked for). */
  accepted = false;
  /** The first bytes of an answer that is not the range asked for. */
  body: Buffer | undefined;
  readonly started: Promise<Reception>;
  readonly dest: Buffer;
  readonly #client: NativeClient;
  readonly #id: number;
  #start!: { resolve: (r: Reception) => void; reject: (err: unknown) => void };
  #end: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  #onFilled: ((bytes: number) => void) | undefined;
  #done: RangeEvent | undefined;
  #error: Error | undefined;
  #unlisten: (() => void) | undefined;

  constructor(client: NativeClient, origin: string, req: ReceiveRequest, signal?: AbortSignal) {
    this.started = new Promise<Reception>((resolve, reject) => (this.#start = { resolve, reject }));
    this.#client = client;
    this.dest = req.out.subarray(req.at, req.at + req.to - req.from + 1);
    this.#id = client.start(origin, req.path, req.headers, this, req);
    if (signal) {
      const onAbort = (): void => this.abort(abortError(signal.reason));
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        this.#unlisten = () => signal.removeEventListener("abort", onAbort);
      }
    }
  }

  onHeaders(e: RangeEvent): void {
    this.statusCode = e.status ?? 0;
    this.headers = headersOf(e);
    this.accepted = e.accepted === true;
    this.#start.resolve(this);
  }

  onProgress(bytes: number): void {
    if (this.#error === undefined) this.#onFilled?.(bytes);
  }

  onDone(e: RangeEvent): void {
    this.#unlisten?.();
    this.body = e.body;
    this.#done = e;
    if (this.#error !== undefined) return;
    if (e.error === "overflow")
      this.#error = new TransientUpstreamError("upstream sent more bytes than the range holds");
    else if (e.error !== undefined) this.#error = transportError(e);
    if (e.bytes > 0) this.#onFilled?.(e.bytes);
    if (this.#error !== undefined) {
      this.#start.reject(this.#error);
      this.#end?.reject(this.#error);
    } else {
      // An answer that ended before its headers (none in HTTP) still settles `started`.
      this.#start.resolve(this);
      this.#end?.resolve();
    }
  }

  /**
   * Hears the count of body bytes in `dest` at every progress report and at the end; settles once
   * the body is in, or with the failure that ended it (after its last count).
   */
  fill(onFilled: (bytes: number) => void): Promise<void> {
    this.#onFilled = onFilled;
    const done = this.#done;
    if (done) {
      // It ended before this was called (its events came in one batch): its bytes are final, failure or not.
      if (done.bytes > 0) onFilled(done.bytes);
      return this.#error !== undefined ? Promise.reject(this.#error) : Promise.resolve();
    }
    if (this.#error !== undefined) return Promise.reject(this.#error);
    return new Promise<void>((resolve, reject) => (this.#end = { resolve, reject }));
  }

  /** The kept body of an answer that is not the range (a refusal), once it is in. */
  async text(): Promise<string> {
    if (!this.#done) await new Promise<void>((resolve, reject) => (this.#end = { resolve, reject }));
    return (this.body ?? Buffer.alloc(0)).toString("utf8");
  }

  /** Stops the request: nothing is written into `out` once this returns; it fails with `err`. */
  abort(err: Error = abortError(undefined)): void {
    if (this.#done || this.#error !== undefined) return;
    this.#error = err;
    this.#client.abort(this.#id);
    this.#unlisten?.();
    this.#start.reject(err);
    this.#end?.reject(err);
  }
}

/** The native client as one origin's dispatcher: `receive` for pulls, `dispatch` for the rest. */
export class NativeOrigin implements Dispatch {
  readonly #client: NativeClient;
  readonly #origin: string;

  constructor(client: NativeClient, origin: string) {
    this.#client = client;
    this.#origin = origin;
  }

  receive(req: ReceiveRequest, signal?: AbortSignal): Reception {
    return new Reception(this.#client, this.#origin, req, signal);
  }

  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    let id = 0;
    let settled = false;
    let reason: Error | null = null;
    const controller = {
      abort: (err: Error) => {
        if (settled) return;
        settled = true;
        reason = err;
        if (id) this.#client.abort(id);
        handler.onResponseError?.(controller as never, err);
      },
      pause() {},
      resume() {},
      get aborted() {
        return reason !== null;
      },
      paused: false,
      get reason() {
        return reason;
      },
    };
    handler.onRequestStart?.(controller as never, {});
    if (settled) return true;
    id = this.#client.start(this.#origin, opts.path, (opts.headers ?? {}) as Record<string, string>, {
      dest: null,
      onHeaders: (e) => {
        if (!settled) handler.onResponseStart?.(controller as never, e.status ?? 0, headersOf(e), "");
      },
      onProgress: () => {},
      onDone: (e) => {
        if (settled) return;
        settled = true;
        if (e.body) handler.onResponseData?.(controller as never, e.body);
        if (e.error !== undefined) handler.onResponseError?.(controller as never, transportError(e));
        else if (e.cut)
          handler.onResponseError?.(
            controller as never,
            new UpstreamTransportError("ERR_UPSTREAM_TRANSPORT", `an answer's body passed ${DISPATCH_BODY} bytes`),
          );
        else handler.onResponseEnd?.(controller as never, {});
      },
    });
    return true;
  }
}

/** Whether `d` takes pulls into buffers (the native client) rather than chunk by chunk. */
export function receives(d: Dispatch): d is NativeOrigin {
  return d instanceof NativeOrigin;
}
