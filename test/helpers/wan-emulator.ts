/**
 * A WAN in front of a local upstream (the local edge, or a range server): TLS + HTTP/2 (HTTP/1.1
 * also offered) with a self-signed certificate made at start, added round-trip time, a shared
 * bandwidth cap, and faults switchable per test. Loopback only.
 *
 * Latency model: a new connection costs one extra RTT (the TLS handshake), and each response's
 * headers leave one RTT after its request arrived. Flow-control windows are not delayed, so the
 * cap, not window sizes, bounds throughput; the cache's windows are sized for real links.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import {
  createSecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Pool } from "undici";

export type Fault =
  /** Answer 503 without forwarding. */
  | { kind: "503" }
  /** Hold the response headers back for `ms` more (a slow tail). */
  | { kind: "delay"; ms: number }
  /** Cut after `afterBytes` of body: the stream only, or the whole connection with every stream on it. */
  | { kind: "reset"; afterBytes: number; scope?: "stream" | "connection" }
  /** Stop sending after `afterBytes` for `ms`, then cut the stream. */
  | { kind: "stall"; afterBytes: number; ms: number }
  /** End the body cleanly after `afterBytes`, short of its Content-Length. */
  | { kind: "short"; afterBytes: number };

export interface FaultRule {
  readonly fault: Fault;
  /** How many requests it hits; default 1. */
  times?: number;
  /** Only requests whose path and Range header pass; default all GETs with a Range of more than one byte. */
  readonly match?: (path: string, range: string | undefined) => boolean;
}

export interface WanEmulatorOptions {
  /** Base URL of the upstream being fronted (plain http on loopback). */
  readonly target: string;
  readonly rttMs?: number;
  /** Link cap in bytes per second, shared by all connections; default unlimited. */
  readonly bandwidthBytesPerSec?: number;
  /** A path answered at once with `stats` as JSON (not counted, not forwarded), for a client in another process. */
  readonly statsPath?: string;
}

export interface WanEmulator {
  /** https://127.0.0.1:PORT */
  readonly url: string;
  /** PEM of the self-signed certificate, for the client's `ca`. */
  readonly ca: string;
  /** Queues a fault; rules are tried in order. */
  inject(rule: FaultRule): void;
  clearFaults(): void;
  /**
   * Emulates the object being replaced upstream: from now on the emulator reports a new ETag and
   * answers `If-Match` with the old one by 412.
   */
  changeEtags(): void;
  readonly stats: {
    requests: number;
    inFlight: number;
    peakInFlight: number;
    bytesSent: number;
    sessions: number;
    httpVersions: Set<string>;
    faultsFired: number;
  };
  /** Requests being handled now, oldest first: path, where each is (phase) and for how long. */
  active(): { method: string; path: string; phase: WanPhase; ms: number }[];
  close(): Promise<void>;
}

/** Where a request is in the emulator: its RTT, the upstream's answer, the body paced by the link, or a full write buffer. */
export type WanPhase = "rtt" | "request-body" | "upstream" | "body" | "drain";

const defaultMatch = (_path: string, range: string | undefined): boolean =>
  range !== undefined && range !== "bytes=0-0";

/** Makes a throwaway self-signed certificate for 127.0.0.1 and localhost. */
export function makeSelfSignedCert(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "ec-wan-cert-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Paces bytes to a rate on a virtual clock, so timer overshoot does not add up. Up to 20 ms of
 * unused time is credited back: when this process is late (a loaded CPU), the link catches up
 * instead of losing capacity the real link would have had.
 */
class Link {
  #t = 0;
  constructor(private readonly bytesPerMs: number) {}
  async take(n: number): Promise<void> {
    if (!Number.isFinite(this.bytesPerMs)) return;
    const now = performance.now();
    this.#t = Math.max(this.#t, now - 20) + n / this.bytesPerMs;
    const wait = this.#t - now;
    if (wait >= 1) await sleep(wait);
  }
}

function drained(res: Http2ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done).off("close", done);
      resolve();
    };
    res.on("drain", done).on("close", done);
  });
}

export async function startWanEmulator(opts: WanEmulatorOptions): Promise<WanEmulator> {
  const { key, cert } = makeSelfSignedCert();
  const rtt = opts.rttMs ?? 0;
  const link = new Link((opts.bandwidthBytesPerSec ?? Infinity) / 1000);
  const upstream = new Pool(opts.target, { connections: 128 });
  const rules: FaultRule[] = [];
  const sessionReady = new WeakMap<object, number>();
  let etagsChanged = false;
  const stats = {
    requests: 0,
    inFlight: 0,
    peakInFlight: 0,
    bytesSent: 0,
    sessions: 0,
    httpVersions: new Set<string>(),
    faultsFired: 0,
  };
  const live = new Map<object, { method: string; path: string; phase: WanPhase; t0: number }>();
  const toNew = (etag: string): string => etag.replace(/"$/, '-v2"');
  const toOld = (etag: string): string => etag.replace(/-v2"$/, '"');

  const takeFault = (path: string, range: string | undefined): Fault | undefined => {
    const i = rules.findIndex((r) => (r.times ?? 1) > 0 && (r.match ?? defaultMatch)(path, range));
    if (i < 0) return undefined;
    const rule = rules[i] as FaultRule;
    rule.times = (rule.times ?? 1) - 1;
    if (rule.times <= 0) rules.splice(i, 1);
    stats.faultsFired++;
    return rule.fault;
  };

  const cut = (req: Http2ServerRequest, res: Http2ServerResponse, scope: "stream" | "connection"): void => {
    if (req.httpVersion === "2.0") {
      if (scope === "connection") (req.stream.session as ServerHttp2Session).destroy();
      else req.stream.close(2 /* INTERNAL_ERROR */);
    } else {
      req.socket.destroy();
    }
    void res;
  };

  const handle = async (req: Http2ServerRequest, res: Http2ServerResponse): Promise<void> => {
    if (opts.statsPath !== undefined && req.url === opts.statsPath) {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ ...stats, httpVersions: [...stats.httpVersions] }));
      return;
    }
    stats.requests++;
    stats.inFlight++;
    stats.peakInFlight = Math.max(stats.peakInFlight, stats.inFlight);
    stats.httpVersions.add(req.httpVersion === "2.0" ? "h2" : "http/1.1");
    const where = { method: req.method, path: req.url, phase: "rtt" as WanPhase, t0: performance.now() };
    live.set(req, where);
    try {
      const session: object = (req.httpVersion === "2.0" ? req.stream.session : req.socket) ?? req;
      let ready = sessionReady.get(session);
      if (ready === undefined) {
        ready = performance.now() + rtt;
        sessionReady.set(session, ready);
      }
      const path = req.url;
      const range = req.headers.range;
      const fault = takeFault(path, range);
      await sleep(Math.max(0, ready - performance.now()) + rtt + (fault?.kind === "delay" ? fault.ms : 0));
      if (fault?.kind === "503") {
        res.writeHead(503, { "content-type": "text/plain" }).end("emulated 503");
        return;
      }
      const headers: Record<string, string> = {};
      // authorization: the edge's manifest route takes a bearer token through the WAN too.
      for (const name of ["range", "if-match", "if-none-match", "if-range", "authorization", "content-type"]) {
        const v = req.headers[name];
        if (typeof v === "string") headers[name] = v;
      }
      if (etagsChanged && headers["if-match"]) {
        if (!headers["if-match"].endsWith('-v2"')) {
          res.writeHead(412).end();
          return;
        }
        headers["if-match"] = toOld(headers["if-match"]);
      }
      // POST (the dataset table's signed-URL and enqueue routes) carries its body through.
      const post = req.method === "POST";
      let body: Buffer | undefined;
      if (post) {
        where.phase = "request-body";
        const chunks: Buffer[] = [];
        for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
        body = Buffer.concat(chunks);
      }
      where.phase = "upstream";
      const up = await upstream.request({
        path,
        method: post ? "POST" : req.method === "HEAD" ? "HEAD" : "GET",
        headers,
        ...(body ? { body } : {}),
      });
      const out: Record<string, string> = {};
      for (const name of [
        "content-length",
        "content-range",
        "etag",
        "accept-ranges",
        "content-type",
        "last-modified",
        "content-encoding",
      ]) {
        const v = up.headers[name];
        if (typeof v === "string") out[name] = name === "etag" && etagsChanged ? toNew(v) : v;
      }
      res.writeHead(up.statusCode, out);
      where.phase = "body";
      let sent = 0;
      const bodyFault = fault?.kind === "delay" ? undefined : fault;
      for await (const chunk of up.body as AsyncIterable<Buffer>) {
        let piece = chunk;
        const limit = bodyFault ? bodyFault.afterBytes - sent : Infinity;
        if (piece.length > limit) piece = piece.subarray(0, Math.max(0, limit));
        if (piece.length > 0) {
          await link.take(piece.length);
          if (res.destroyed || res.stream?.destroyed) break;
          sent += piece.length;
          stats.bytesSent += piece.length;
          if (!res.write(piece)) {
            where.phase = "drain";
            await drained(res);
            where.phase = "body";
          }
        }
        if (piece.length < chunk.length && bodyFault) {
          up.body.destroy();
          if (bodyFault.kind === "reset") cut(req, res, bodyFault.scope ?? "stream");
          else if (bodyFault.kind === "short") res.end();
          else {
            await sleep(bodyFault.ms);
            cut(req, res, "stream");
          }
          return;
        }
      }
      if (!res.destroyed) res.end();
    } catch {
      if (!res.headersSent) res.writeHead(502).end();
      else if (!res.destroyed) res.destroy();
    } finally {
      live.delete(req);
      stats.inFlight--;
    }
  };

  const server = createSecureServer(
    { key, cert, allowHTTP1: true, settings: { maxConcurrentStreams: 256, initialWindowSize: 8 << 20 } },
    (req, res) => void handle(req, res),
  );
  server.on("session", (s) => {
    stats.sessions++;
    s.on("error", () => {});
  });
  const sockets = new Set<import("node:tls").TLSSocket>();
  server.on("secureConnection", (sock) => {
    sockets.add(sock);
    sock.on("error", () => {}).on("close", () => sockets.delete(sock));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  return {
    url: `https://127.0.0.1:${port}`,
    ca: cert,
    inject: (rule) => void rules.push(rule),
    clearFaults: () => void (rules.length = 0),
    changeEtags: () => void (etagsChanged = true),
    stats,
    active: () => {
      const now = performance.now();
      return [...live.values()].map(({ t0, ...w }) => ({ ...w, ms: Math.round(now - t0) }));
    },
    close: async () => {
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await upstream.destroy();
    },
  };
}
