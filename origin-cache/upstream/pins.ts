/**
 * Which version of each object the cache serves: the first touch of an object probes it (and so
 * warms its origin's connection), every later read shares that pin, and a read that knows
 * another version, or a pull that met ERR_ETAG_CHANGED, makes the next read learn it again.
 */
import type { CacheMetrics } from "../metrics.js";
import { EtagChangedError } from "../errors.js";
import type { Limiter } from "../../common/limiter.js";
import { Answer } from "./answer.js";
import { pinFromProbe, type Pin } from "./etag-pin.js";
import type { UpstreamPools } from "./pool.js";
import { withRetry, type RetryPolicy } from "./retry.js";

/** Bytes of a probe's body read before it is cut short. */
const PROBE_BODY = 64 << 10;

export interface PinsOptions {
  readonly pools: UpstreamPools;
  readonly limiter: Limiter;
  readonly metrics: CacheMetrics;
  readonly retry: RetryPolicy;
  /** Caps the probes of `validate`, apart from the pulls' cap, so a flood of new URLs cannot starve reads. */
  readonly checks: Limiter;
  /** Upstream answered a probe of `url` with the object: it accepts that URL. */
  readonly onAccepted?: (url: URL) => void;
}

export class Pins {
  readonly #opts: PinsOptions;
  readonly #pins = new Map<string, Promise<Pin>>();
  /** The pins that have resolved, for answers that must not wait on upstream. */
  readonly #settled = new WeakMap<Promise<Pin>, Pin>();
  // The first request to an origin goes alone, so the burst behind it finds one warm (HTTP/2)
  // connection instead of opening one connection per concurrent request.
  readonly #warm = new Map<string, Promise<unknown>>();

  constructor(opts: PinsOptions) {
    this.#opts = opts;
  }

  /** The pin of `url`; `accepts` (by default: equal to `expect`) says whether a pin will do. */
  async pin(url: URL, expect?: string, accepts = (etag: string) => etag === expect): Promise<Pin> {
    const key = url.pathname;
    let p = this.#pins.get(key);
    if (!p) {
      p = this.#probe(url);
      this.#pins.set(key, p);
      const mine = p;
      p.then(
        (pin) => void this.#settled.set(mine, pin),
        () => this.#pins.get(key) === mine && this.#pins.delete(key),
      );
    }
    const pin = await p;
    if (expect === undefined || accepts(pin.etag)) return pin;
    // The caller knows a newer (or older) version than the pin: learn again once.
    if (this.#pins.get(key) === p) this.#pins.delete(key);
    const fresh = await this.pin(url);
    if (!accepts(fresh.etag)) throw new EtagChangedError(key, expect, fresh.etag);
    return fresh;
  }

  /** Settles once upstream accepted `url` (one probe, never pinned); throws its refusal. */
  async validate(url: URL): Promise<void> {
    await this.#request(url, this.#opts.checks);
  }

  /** The pin of `url` if it is already known (nothing asked of upstream); undefined otherwise. */
  peek(url: URL): Pin | undefined {
    const p = this.#pins.get(url.pathname);
    return p && this.#settled.get(p);
  }

  /** After `pin`'s object changed upstream: later reads learn the new version. */
  forget(pin: Pin): void {
    void this.#pins.get(pin.key)?.then(
      (p) => p.etag === pin.etag && this.#pins.delete(pin.key),
      () => {},
    );
  }

  // The probe also warms the connection (and settles HTTP/2) before a burst of range reads.
  async #probe(url: URL): Promise<Pin> {
    const warming = this.#warm.get(url.origin);
    if (warming) await warming.catch(() => {});
    const probe = this.#request(url, this.#opts.limiter);
    if (!warming) this.#warm.set(url.origin, probe);
    return probe;
  }

  /** A one-byte GET of `url` in a slot of `limiter`: the object's pin, or upstream's refusal. */
  #request(url: URL, limiter: Limiter): Promise<Pin> {
    const { pools, metrics, retry } = this.#opts;
    const pool = pools.get(url.origin);
    return withRetry(
      async () => {
        const release = await limiter.acquire();
        try {
          metrics.upstreamRequest();
          const res = await new Answer(pool, {
            origin: url.origin,
            path: url.pathname + url.search,
            headers: { range: "bytes=0-0" },
          }).started;
          // The body is read and dropped; one past PROBE_BODY bytes (an upstream that ignored the range) is cut short.
          let size = 0;
          await res
            .read((chunk) => {
              size += chunk.length;
              if (size > PROBE_BODY) throw new Error("probe body too long");
            })
            .catch(() => {});
          const pin = pinFromProbe(url.pathname, url.href, res.statusCode, res.headers);
          this.#opts.onAccepted?.(url);
          return pin;
        } finally {
          release();
        }
      },
      retry,
      { url: url.href, onRetry: () => metrics.retry() },
    );
  }
}
