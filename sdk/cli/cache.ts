/**
 * `ec cache --upstream URL --dir PATH --max-bytes N [--listen HOST:PORT]`: the origin-cache
 * service of this host until SIGINT/SIGTERM, then a summary of what it served.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { startCache, type StartCacheOptions } from "../../origin-cache/index.js";
import { reportErrors } from "../dev/cli-report.js";
import { waitForSignal } from "../dev/wait-for-signal.js";
import { InvalidOptionError } from "../errors.js";

const USAGE = `usage: ec cache --upstream URL [--upstream URL…] --dir PATH --max-bytes N[K|M|G|T] [--listen HOST:PORT]
                [--block-size N[K|M]] [--max-in-flight N] [--hedge-after-ms N] [--plan-idle-ms N] [--ca FILE] [--group-read]
                [--upstream-client undici|native|node-http2] [--json]
  --listen       default 127.0.0.1:7070 (loopback; the cache fetches only from its upstreams)
  --max-bytes    hard bound on the cache directory; K/M/G/T are powers of 1024
  --block-size   default 16K up to 4G of --max-bytes, then doubling so the store holds at most 256Ki blocks (64K at 16G, 1M at 256G)
  --plan-idle-ms a client's prefetch plan is dropped after this long without a plan or a read (default 60000)
  --ca FILE      PEM certificate authority for an https upstream with a private certificate
  --upstream-client  the HTTP client of the upstreams: undici (default, or EC_UPSTREAM_CLIENT), native
                 (libcurl in the addon, less CPU per GB; needs libcurl.so.4) or node-http2
  --group-read   let the directory's group read the store (2750/0640); default 0700/0600, this user alone
  --dir          a new or empty directory, or one the cache made: anything else is refused
`;

type UpstreamClient = NonNullable<StartCacheOptions["upstreamClient"]>;
const UPSTREAM_CLIENTS: readonly UpstreamClient[] = ["undici", "native", "node-http2"];

const UNITS: Record<string, number> = { "": 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

/** "64M" → 67108864; units are powers of 1024, with an optional "i" and "B" ("64MiB"). */
export function parseBytes(flag: string, raw: string | undefined): number {
  const m = raw === undefined ? null : /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$/i.exec(raw.trim());
  const n = m ? Math.floor(Number(m[1]) * (UNITS[(m[2] ?? "").toUpperCase()] ?? NaN)) : NaN;
  if (!Number.isSafeInteger(n) || n < 0)
    throw new InvalidOptionError(`Expected a byte count like 200G for ${flag} but received ${describeReceived(raw)}`);
  return n;
}

function parseListen(raw: string | undefined): { host: string; port: number } {
  if (raw === undefined) return { host: "127.0.0.1", port: 7070 };
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(raw);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535))
    throw new InvalidOptionError(`Expected HOST:PORT for --listen but received ${describeReceived(raw)}`);
  return { host: (m[1] ?? m[2]) as string, port };
}

function parseCount(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1))
    throw new InvalidOptionError(`Expected a positive integer for ${flag} but received ${describeReceived(raw)}`);
  return n;
}

/** The service options and output mode `ec cache` was asked for. */
export function parseCacheArgs(argv: string[]): { options: StartCacheOptions; json: boolean; help: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      upstream: { type: "string", multiple: true },
      dir: { type: "string" },
      "max-bytes": { type: "string" },
      listen: { type: "string" },
      "block-size": { type: "string" },
      "max-in-flight": { type: "string" },
      "hedge-after-ms": { type: "string" },
      "plan-idle-ms": { type: "string" },
      ca: { type: "string" },
      "upstream-client": { type: "string" },
      "group-read": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) return { options: { upstreams: [], dir: "", maxBytes: 0 }, json: false, help: true };
  if (!values.upstream?.length) throw new InvalidOptionError("Expected --upstream URL (the edge) but received none");
  if (!values.dir) throw new InvalidOptionError("Expected --dir PATH but received none");
  const blockSize = values["block-size"] === undefined ? undefined : parseBytes("--block-size", values["block-size"]);
  const maxInFlight = parseCount("--max-in-flight", values["max-in-flight"]);
  const hedgeAfterMs = parseCount("--hedge-after-ms", values["hedge-after-ms"]);
  const planIdleMs = parseCount("--plan-idle-ms", values["plan-idle-ms"]);
  const client = values["upstream-client"];
  if (client !== undefined && !UPSTREAM_CLIENTS.includes(client as UpstreamClient))
    throw new InvalidOptionError(
      `Expected one of ${UPSTREAM_CLIENTS.join(", ")} for --upstream-client but received ${describeReceived(client)}`,
    );
  return {
    options: {
      upstreams: values.upstream,
      dir: values.dir,
      maxBytes: parseBytes("--max-bytes", values["max-bytes"]),
      listen: parseListen(values.listen),
      ...(blockSize !== undefined ? { blockSize } : {}),
      ...(maxInFlight !== undefined ? { maxInFlight } : {}),
      ...(hedgeAfterMs !== undefined ? { hedgeAfterMs } : {}),
      ...(planIdleMs !== undefined ? { planIdleMs } : {}),
      ...(values.ca ? { tls: { ca: readFileSync(values.ca, "utf8") } } : {}),
      ...(values["group-read"] ? { groupRead: true } : {}),
      ...(client !== undefined ? { upstreamClient: client as UpstreamClient } : {}),
      logLevel: values.json ? "warn" : "info",
    },
    json: values.json,
    help: false,
  };
}

/**
 * @example
 * await main(["--upstream", "http://127.0.0.1:8787", "--dir", "/nvme/ec", "--max-bytes", "200G", "--json"]);
 * // prints {"cache":"http://127.0.0.1:7070",...}, serves until SIGINT, then a summary line
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("cache", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { options, json, help } = parseCacheArgs(argv);
  if (help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const signal = waitForSignal();
  const svc = await startCache(options);
  const up = { cache: svc.url, dir: options.dir, maxBytes: options.maxBytes, upstreams: options.upstreams };
  process.stdout.write(
    json
      ? `${JSON.stringify(up)}\n`
      : `ec cache is up at ${svc.url} (Ctrl-C stops it); upstreams ${options.upstreams.join(", ")}; ${options.dir} ≤ ${options.maxBytes} bytes\n`,
  );
  await signal;
  const s = svc.stats();
  await svc.close();
  const summary = {
    hits: s.hits,
    misses: s.misses,
    hitRatio: Number(s.hitRatio.toFixed(4)),
    bytesFromUpstream: s.bytesFromUpstream,
    bytesFromDisk: s.bytesFromDisk,
    residentBytes: s.residentBytes,
    evictions: s.evictions,
    peakInFlight: s.peakInFlight,
    httpVersions: s.httpVersions,
    upstreamClients: s.upstreamClients,
  };
  process.stdout.write(
    json
      ? `${JSON.stringify(summary)}\n`
      : `ec cache stopped: ${s.hits} hits, ${s.misses} misses (${(100 * s.hitRatio).toFixed(1)}%), ${s.bytesFromUpstream} bytes from upstream, ${s.bytesFromDisk} from disk, ${s.residentBytes} resident\n`,
  );
  return 0;
}
