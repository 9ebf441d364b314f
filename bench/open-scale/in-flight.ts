/**
 * What a client process has in flight, for a client that stops: every undici request (the
 * npm undici of the control requests and the cache, and Node's fetch, which publish on the
 * same diagnostics channels) from creation to its trailers or error, with its phase and age,
 * and the libuv resources that keep the process waiting.
 */
import { subscribe } from "node:diagnostics_channel";

interface Tracked {
  readonly what: string;
  readonly t0: number;
  phase: "sent" | "headers";
  status?: number;
  tHeaders?: number;
}

interface UndiciRequest {
  readonly origin?: string | URL;
  readonly method?: string;
  readonly path?: string;
}

export interface InFlight {
  /** Requests created and not yet finished, oldest first, with how long each has waited. */
  pending(): string[];
  /** Counts since start: created, finished (trailers), failed. */
  counts(): { created: number; finished: number; failed: number };
  /** The report written on a stall: counts, pending requests, active libuv resources. */
  report(): string;
}

/**
 * @example
 * const flight = trackInFlight();
 * process.on("SIGUSR2", () => process.stderr.write(flight.report()));
 */
export function trackInFlight(): InFlight {
  const live = new Map<object, Tracked>();
  const n = { created: 0, finished: 0, failed: 0 };
  subscribe("undici:request:create", (m) => {
    const r = (m as { request: UndiciRequest }).request;
    n.created++;
    live.set(r, {
      what: `${r.method ?? "?"} ${String(r.origin ?? "")}${r.path ?? ""}`,
      t0: performance.now(),
      phase: "sent",
    });
  });
  subscribe("undici:request:headers", (m) => {
    const { request, response } = m as { request: object; response: { statusCode: number } };
    const t = live.get(request);
    if (!t) return;
    t.phase = "headers";
    t.status = response.statusCode;
    t.tHeaders = performance.now();
  });
  subscribe("undici:request:trailers", (m) => {
    if (live.delete((m as { request: object }).request)) n.finished++;
  });
  subscribe("undici:request:error", (m) => {
    if (live.delete((m as { request: object }).request)) n.failed++;
  });
  const pending = () => {
    const now = performance.now();
    return [...live.values()].map((t) => {
      const age = ((now - t.t0) / 1000).toFixed(1);
      const body =
        t.phase === "headers"
          ? `, status ${t.status} after ${((t.tHeaders! - t.t0) / 1000).toFixed(3)} s, body not finished`
          : ", no headers yet";
      return `${t.what} (${age} s${body})`;
    });
  };
  return {
    pending,
    counts: () => ({ ...n }),
    report: () => {
      const p = pending();
      const resources = process.getActiveResourcesInfo();
      const byKind = new Map<string, number>();
      for (const r of resources) byKind.set(r, (byKind.get(r) ?? 0) + 1);
      return [
        `[in-flight] undici requests: ${n.created} created, ${n.finished} finished, ${n.failed} failed, ${p.length} pending`,
        ...p.map((x) => `[in-flight]   ${x}`),
        `[in-flight] active resources: ${[...byKind].map(([k, c]) => `${k} ×${c}`).join(", ")}`,
        "",
      ].join("\n");
    },
  };
}
