/**
 * The cold path against the transport's limit, side by side in one run: a native HTTP/2 client
 * (curl, nghttp2 + OpenSSL) and the origin-cache pull the same ranges through the same WAN
 * emulator (TLS + HTTP/2, RTT, bandwidth cap), each on the same client CPU set, `--concurrency`
 * requests in flight on one connection. Reported per side: MB/s and CPU seconds per GB received
 * (curl: its whole process, from /proc after it exits; the cache: its process while it pulls
 * and stores, after an unmeasured warm-up), and the emulator's own CPU per GB (this process,
 * pinned to the remote set), so the rig's limit is visible. `--mbps 0` takes the link cap off:
 * host-scale ingest, MB per cache CPU-second (what one cache core would ingest).
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/transport.js [--objects 4] [--object-mib 64] [--range-kib 1024] [--concurrency 16] [--rtt-ms 50] [--mbps 400] [--block-kib 16] [--mode read|plan] [--rounds 2] [--sides curl,node,undici,cache,cache-h2,cache-native] [--json]
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startRangeServer } from "../test/helpers/range-server.js";
import { startWanEmulator } from "../test/helpers/wan-emulator.js";
import { defaultCpuSets, onClient, parseCpuList, pinSelfToRemote, type CpuSets } from "./compare/cpu-sets.js";
import { median } from "./stats.js";
import type { CachePullJob } from "./transport/cache-pull.js";
import type { H2PullJob } from "./transport/h2-pull.js";
import { rangesOf, type PullRange, type PullResult } from "./transport/ranges.js";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "4" },
    "object-mib": { type: "string", default: "64" },
    "range-kib": { type: "string", default: "1024" },
    concurrency: { type: "string", default: "16" },
    "rtt-ms": { type: "string", default: "50" },
    mbps: { type: "string", default: "400" },
    "block-kib": { type: "string", default: "16" },
    "warmup-mib": { type: "string", default: "32" },
    mode: { type: "string", default: "read" },
    rounds: { type: "string", default: "2" },
    sides: { type: "string", default: "curl,node,undici,cache" },
    "client-cpus": { type: "string" },
    "remote-cpus": { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const num = (flag: keyof typeof values, min: number): number => {
  const v = Number(values[flag]);
  if (!Number.isFinite(v) || v < min)
    throw new Error(`Expected a number of at least ${min} for --${flag} but received ${String(values[flag])}`);
  return v;
};
const OBJECTS = num("objects", 1);
const SIZE = num("object-mib", 1) * 2 ** 20;
const SPAN = num("range-kib", 4) * 1024;
const CONCURRENCY = num("concurrency", 1);
const RTT = num("rtt-ms", 0);
const MBPS = num("mbps", 0);
const BLOCK = num("block-kib", 4) * 1024;
const WARMUP = num("warmup-mib", 1) * 2 ** 20;
const ROUNDS = num("rounds", 1);
const MODE = values.mode as "read" | "plan";
if (MODE !== "read" && MODE !== "plan") throw new Error(`Expected read or plan for --mode but received ${MODE}`);
const SIDES = (values.sides ?? "").split(",").filter(Boolean);
const KNOWN_SIDES = ["curl", "node", "undici", "cache", "cache-h2", "cache-native"];
/** The cache sides and the upstream client each runs. */
const CACHE_CLIENTS = { cache: "undici", "cache-h2": "node-http2", "cache-native": "native" } as const;
for (const s of SIDES)
  if (!KNOWN_SIDES.includes(s))
    throw new Error(`Expected some of ${KNOWN_SIDES.join(",")} for --sides but received ${s}`);
const log = (msg: string): void => void process.stderr.write(`[transport] ${msg}\n`);

/** Runs `command` to its end; stdout, and the exit code. */
function run(command: string, args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => void (out += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => void (err += c));
    child.on("error", reject).on("close", (code) => resolve({ code: code ?? -1, out, err }));
  });
}

const TICKS = 100;

/** curl fetching every range, CONCURRENCY at a time over one HTTP/2 connection, to /dev/null. */
async function curlPull(
  sets: CpuSets,
  base: string,
  caFile: string,
  ranges: readonly PullRange[],
  work: string,
): Promise<PullResult> {
  const cfg = join(work, "curl.cfg");
  const lines = ["parallel", `parallel-max = ${CONCURRENCY}`];
  ranges.forEach((r, i) => {
    if (i > 0) lines.push("next");
    lines.push(
      "http2",
      `cacert = "${caFile}"`,
      "silent",
      "show-error",
      "fail",
      `range = "${r.offset}-${r.offset + r.length - 1}"`,
      'output = "/dev/null"',
      `url = "${base}${r.path}"`,
    );
  });
  await writeFile(cfg, `${lines.join("\n")}\n`);
  // A shell that waits for curl, then prints its own stat: cutime + cstime are curl's CPU.
  const script = 'curl -K "$1"; s=$?; cat /proc/$$/stat; exit $s';
  const { command, args } = onClient(sets, "sh", ["-c", script, "sh", cfg]);
  const t0 = performance.now();
  const r = await run(command, args);
  const seconds = (performance.now() - t0) / 1000;
  if (r.code !== 0) throw new Error(`curl failed (${r.code}): ${r.err.trim()}`);
  const stat = r.out.trim().split("\n").pop() ?? "";
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 16 and 17 of stat (cutime, cstime); f starts at field 3.
  const cpuSeconds = (Number(f[13]) + Number(f[14])) / TICKS;
  return { bytes: ranges.reduce((n, x) => n + x.length, 0), seconds, cpuSeconds, requests: ranges.length };
}

/** One of the Node pullers (transport/cache-pull.js or transport/h2-pull.js) in a process of its own on the client set. */
async function nodePull(
  file: string,
  sets: CpuSets,
  job: CachePullJob | H2PullJob,
): Promise<PullResult & Record<string, unknown>> {
  const child = fileURLToPath(new URL(file, import.meta.url));
  // EC_BENCH_NODE_ARGS: node flags for the cache's process (e.g. --cpu-prof), as in bench/compare.
  const flags = (process.env.EC_BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  // EC_BENCH_WRAP: a command put before node (e.g. `perf record -o FILE --`), for profiles of CPU time, not wall time.
  const wrap = (process.env.EC_BENCH_WRAP ?? "").split(" ").filter(Boolean);
  const line = [...wrap, process.execPath, ...flags, child, JSON.stringify(job)];
  const { command, args } = onClient(sets, line[0] as string, line.slice(1));
  const r = await run(command, args);
  if (r.code !== 0) throw new Error(`${file} failed (${r.code}): ${r.err.trim()}`);
  return JSON.parse(r.out.trim().split("\n").pop() ?? "null");
}

interface Side extends PullResult {
  readonly side: string;
  readonly mbs: number;
  readonly cpuSecondsPerGb: number;
  readonly emulatorCpuSecondsPerGb: number;
  /** Connections the emulator accepted during this pull (1: every request multiplexed on one). */
  readonly connections: number;
}

async function main(): Promise<void> {
  const sets = pinSelfToRemote(
    values["client-cpus"] !== undefined && values["remote-cpus"] !== undefined
      ? { client: parseCpuList(values["client-cpus"]), remote: parseCpuList(values["remote-cpus"]) }
      : defaultCpuSets(),
  );
  const work = await mkdtemp(join(tmpdir(), "ec-bench-transport-"));
  const origin = await startRangeServer();
  const cap = MBPS > 0 ? (MBPS * 1e6) / 8 : undefined;
  const wan = await startWanEmulator({ target: origin.url, rttMs: RTT, ...(cap ? { bandwidthBytesPerSec: cap } : {}) });
  try {
    const data = randomBytes(SIZE);
    for (let i = 0; i < OBJECTS; i++) origin.put(`/v1/objects/t/m${i}.mp4`, data);
    const warmObjects = Math.ceil(WARMUP / SIZE);
    for (let i = 0; i < warmObjects; i++) origin.put(`/v1/objects/t/w${i}.mp4`, data);
    const caFile = join(work, "ca.pem");
    await writeFile(caFile, wan.ca);
    const ranges = rangesOf("/v1/objects/t/m", OBJECTS, SIZE, SPAN);
    const warmup = rangesOf("/v1/objects/t/w", warmObjects, Math.min(SIZE, WARMUP), SPAN);
    log(
      `${OBJECTS} × ${SIZE / 2 ** 20} MiB in ${SPAN / 1024} KiB ranges, ${CONCURRENCY} in flight, ${RTT} ms RTT, ${cap ? `${MBPS} Mbit/s` : "no cap"}; client CPUs ${sets.client.join(",")}, remote ${sets.remote.join(",")}${sets.unpinned ? ` (unpinned: ${sets.unpinned})` : ""}`,
    );
    const rounds: Side[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
      const sides: Side[] = [];
      for (const side of order) {
        const e0 = process.cpuUsage();
        const sessions0 = wan.stats.sessions;
        const common = { upstream: wan.url, ca: wan.ca, concurrency: CONCURRENCY, warmup, ranges };
        const r =
          side === "curl"
            ? await curlPull(sets, wan.url, caFile, ranges, work)
            : side in CACHE_CLIENTS
              ? await nodePull("./transport/cache-pull.js", sets, {
                  ...common,
                  blockSize: BLOCK,
                  mode: MODE,
                  client: CACHE_CLIENTS[side as keyof typeof CACHE_CLIENTS],
                })
              : await nodePull("./transport/h2-pull.js", sets, { ...common, client: side as "node" | "undici" });
        const e = process.cpuUsage(e0);
        const gb = r.bytes / 1e9;
        const s: Side = {
          ...r,
          side,
          mbs: r.bytes / r.seconds / 1e6,
          cpuSecondsPerGb: r.cpuSeconds / gb,
          // The Node pullers' figures leave their warm-up out; the emulator's CPU covers it too.
          connections: wan.stats.sessions - sessions0,
          emulatorCpuSecondsPerGb:
            (e.user + e.system) /
            1e6 /
            ((side === "curl" ? r.bytes : r.bytes + warmup.reduce((n, x) => n + x.length, 0)) / 1e9),
        };
        log(`round ${round} ${side}: ${JSON.stringify(s)}`);
        sides.push(s);
      }
      rounds.push(sides);
    }
    const pick = (side: string): Side[] => rounds.flatMap((r) => r.filter((s) => s.side === side));
    const ratios = rounds.flatMap((r) => {
      const c = r.find((s) => s.side === "cache");
      const k = r.find((s) => s.side === "curl");
      return c && k ? [c.cpuSecondsPerGb / k.cpuSecondsPerGb] : [];
    });
    // The cache with its upstream on node:http2 against the same cache on undici (its default), per round.
    const clientRatios = rounds.flatMap((r) => {
      const c = r.find((s) => s.side === "cache");
      const h = r.find((s) => s.side === "cache-h2");
      return c && h ? [h.cpuSecondsPerGb / c.cpuSecondsPerGb] : [];
    });
    // The cache with its upstream on libcurl in the addon: against curl, and against itself on undici.
    const nativeRatios = rounds.flatMap((r) => {
      const n = r.find((s) => s.side === "cache-native");
      const k = r.find((s) => s.side === "curl");
      return n && k ? [n.cpuSecondsPerGb / k.cpuSecondsPerGb] : [];
    });
    const nativeVsCache = rounds.flatMap((r) => {
      const n = r.find((s) => s.side === "cache-native");
      const c = r.find((s) => s.side === "cache");
      return n && c ? [n.cpuSecondsPerGb / c.cpuSecondsPerGb] : [];
    });
    const summary = (side: string) => {
      const s = pick(side);
      return s.length === 0
        ? undefined
        : {
            mbs: median(s.map((x) => x.mbs)),
            cpuSecondsPerGb: median(s.map((x) => x.cpuSecondsPerGb)),
            mbPerCpuSecond: median(s.map((x) => x.bytes / 1e6 / x.cpuSeconds)),
            emulatorCpuSecondsPerGb: median(s.map((x) => x.emulatorCpuSecondsPerGb)),
            requests: median(s.map((x) => x.requests ?? 0)),
          };
    };
    const result = {
      config: {
        objects: OBJECTS,
        objectMiB: SIZE / 2 ** 20,
        rangeKiB: SPAN / 1024,
        concurrency: CONCURRENCY,
        rttMs: RTT,
        mbps: MBPS,
        blockKiB: BLOCK / 1024,
        mode: MODE,
        rounds: ROUNDS,
        cpus: sets,
      },
      curl: summary("curl"),
      node: summary("node"),
      undici: summary("undici"),
      cache: summary("cache"),
      "cache-h2": summary("cache-h2"),
      "cache-native": summary("cache-native"),
      cache_cpu_per_gb_vs_curl: ratios.length ? median(ratios) : undefined,
      cache_native_cpu_per_gb_vs_curl: nativeRatios.length ? median(nativeRatios) : undefined,
      nativeRoundRatios: nativeRatios,
      cache_native_cpu_per_gb_vs_cache: nativeVsCache.length ? median(nativeVsCache) : undefined,
      roundRatios: ratios,
      cache_h2_cpu_per_gb_vs_cache: clientRatios.length ? median(clientRatios) : undefined,
      clientRoundRatios: clientRatios,
      rounds,
    };
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      const f = (x: number | undefined): string => (x === undefined ? "–" : x.toFixed(2));
      for (const side of ["curl", "node", "undici", "cache", "cache-h2", "cache-native"] as const) {
        const s = result[side];
        if (s)
          process.stdout.write(
            `${side.padEnd(12)} ${f(s.mbs)} MB/s, ${f(s.cpuSecondsPerGb)} CPU-s/GB (${f(s.mbPerCpuSecond)} MB per CPU-second), ${s.requests} requests; emulator ${f(s.emulatorCpuSecondsPerGb)} CPU-s/GB\n`,
          );
      }
      process.stdout.write(
        `cache_cpu_per_gb_vs_curl ${f(result.cache_cpu_per_gb_vs_curl)} (rounds: ${ratios.map(f).join(" ")}; target ≤ 1.5)\n`,
      );
      if (nativeRatios.length)
        process.stdout.write(
          `cache-native (upstream on libcurl in the addon) ÷ curl CPU per GB ${f(result.cache_native_cpu_per_gb_vs_curl)} (rounds: ${nativeRatios.map(f).join(" ")}; target ≤ 1.5); ÷ cache (undici) ${f(result.cache_native_cpu_per_gb_vs_cache)}\n`,
        );
      if (clientRatios.length)
        process.stdout.write(
          `cache-h2 (upstream on node:http2) ÷ cache (undici) CPU per GB ${f(result.cache_h2_cpu_per_gb_vs_cache)} (rounds: ${clientRatios.map(f).join(" ")})\n`,
        );
    }
  } finally {
    await wan.close();
    await origin.close();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
