/**
 * Counters behind `/v1/stats` and `/metrics`. Each cache owns its registry, so several caches in
 * one process (tests, benches) never share or clash.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

const LATENCY_WINDOW = 2048;

export class CacheMetrics {
  readonly registry = new Registry();
  hits = 0;
  misses = 0;
  coalesced = 0;
  bytesFromUpstream = 0;
  bytesFromDisk = 0;
  bytesFromMemory = 0;
  bytesPassedThrough = 0;
  upstreamRequests = 0;
  retries = 0;
  hedges = 0;
  corruptBlocks = 0;
  /** Locate requests answered (single, batched or long-polled), each once. */
  locates = 0;
  readonly #latencies: number[] = [];
  #next = 0;

  readonly #hits = new Counter({
    name: "ec_cache_hits_total",
    help: "Block reads served from disk or memory",
    registers: [this.registry],
  });
  readonly #misses = new Counter({
    name: "ec_cache_misses_total",
    help: "Block reads that needed upstream",
    registers: [this.registry],
  });
  readonly #upstreamBytes = new Counter({
    name: "ec_cache_upstream_bytes_total",
    help: "Bytes received from upstream",
    registers: [this.registry],
  });
  readonly #diskBytes = new Counter({
    name: "ec_cache_disk_bytes_total",
    help: "Bytes served from the block store",
    registers: [this.registry],
  });
  readonly #requests = new Counter({
    name: "ec_cache_upstream_requests_total",
    help: "Upstream HTTP requests",
    registers: [this.registry],
  });
  readonly #retries = new Counter({
    name: "ec_cache_upstream_retries_total",
    help: "Upstream attempts retried",
    registers: [this.registry],
  });
  readonly #latency = new Histogram({
    name: "ec_cache_upstream_block_seconds",
    help: "Time from an upstream pull's request to its first block, one sample per pull",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly evictions = new Counter({
    name: "ec_cache_evictions_bytes_total",
    help: "Bytes evicted",
    registers: [this.registry],
  });

  constructor(live: { inFlight: () => number; resident: () => number }) {
    new Gauge({
      name: "ec_cache_upstream_in_flight",
      help: "Upstream requests in flight",
      registers: [this.registry],
      collect() {
        this.set(live.inFlight());
      },
    });
    new Gauge({
      name: "ec_cache_resident_bytes",
      help: "Bytes in the block directory",
      registers: [this.registry],
      collect() {
        this.set(live.resident());
      },
    });
  }

  hit(bytes: number, fromDisk: boolean): void {
    this.hits++;
    this.#hits.inc();
    if (fromDisk) {
      this.bytesFromDisk += bytes;
      this.#diskBytes.inc(bytes);
    } else this.bytesFromMemory += bytes;
  }
  miss(shared: boolean): void {
    this.misses++;
    this.#misses.inc();
    if (shared) this.coalesced++;
  }
  upstreamRequest(): void {
    this.upstreamRequests++;
    this.#requests.inc();
  }
  upstreamBytes(n: number): void {
    this.bytesFromUpstream += n;
    this.#upstreamBytes.inc(n);
  }
  retry(): void {
    this.retries++;
    this.#retries.inc();
  }
  /** A pull's first block came in `ms` after its request began (one sample per pull, whatever its blocks). */
  blockLatency(ms: number): void {
    this.#latency.observe(ms / 1000);
    this.#latencies[this.#next] = ms;
    this.#next = (this.#next + 1) % LATENCY_WINDOW;
  }

  /** p50/p90/p99 over the most recent pulls (time to each one's first block), in milliseconds. */
  latencyPercentiles(): { p50: number; p90: number; p99: number; samples: number } {
    const s = [...this.#latencies].sort((a, b) => a - b);
    const at = (q: number): number => (s.length ? (s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0) : 0);
    return { p50: at(0.5), p90: at(0.9), p99: at(0.99), samples: s.length };
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
