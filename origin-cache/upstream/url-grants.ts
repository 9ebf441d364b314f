/**
 * Which URLs may take bytes out of the cache: a byte leaves only for a URL that upstream would
 * accept at that moment. The cache holds no signing secret; instead each distinct URL is shown to
 * upstream once (the probe that pins its object, a pull made with it, or a one-byte GET of its
 * own) and remembered as accepted by its exact text, query and all, until its `exp` (unix
 * seconds, the edge's signed URLs) has passed, or, for a URL without one (a plain upstream, a
 * presigned URL of another form), for `grantMs`. An `exp` in the past is refused here without
 * asking upstream. Refusals (401/403) are remembered as long, so a forged URL repeated costs
 * upstream nothing more. Nothing else in the query is read: its parameters stay upstream's
 * business. At most one upstream round trip per distinct URL, none per read.
 */
import { SignatureExpiredError, UpstreamStatusError } from "../errors.js";

export interface UrlGrantsOptions {
  /** Asks upstream whether it accepts `url`: settles when it does, throws its refusal. */
  readonly validate: (url: URL) => Promise<void>;
  /** How long a URL without an `exp` stays accepted once upstream accepted it. */
  readonly grantMs: number;
  /** Most URLs remembered (accepted and refused each); the oldest are forgotten first. */
  readonly max?: number;
  /** Milliseconds since the epoch; default Date.now. */
  readonly now?: () => number;
}

const DEFAULT_MAX = 1 << 16;

/** The URL's `exp` in unix seconds, or undefined when it has none that reads as one. */
export function expiryOf(url: URL): number | undefined {
  const raw = url.searchParams.get("exp");
  return raw !== null && /^\d{1,12}$/.test(raw) ? Number(raw) : undefined;
}

export class UrlGrants {
  readonly #o: UrlGrantsOptions;
  readonly #now: () => number;
  readonly #max: number;
  /** Accepted URLs by their text: until when (epoch ms, exclusive). */
  readonly #accepted = new Map<string, number>();
  /** Refused URLs by their text: the refusal, and until when it stands. */
  readonly #refused = new Map<string, { readonly err: unknown; readonly until: number }>();
  readonly #checking = new Map<string, Promise<void>>();

  constructor(o: UrlGrantsOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
    this.#max = o.max ?? DEFAULT_MAX;
  }

  /** True when the URL's `exp` has passed. */
  expired(url: URL): boolean {
    const exp = expiryOf(url);
    return exp !== undefined && this.#now() >= (exp + 1) * 1000;
  }

  /** Throws ERR_SIGNATURE_EXPIRED when the URL's `exp` has passed; asks nobody. */
  refuseExpired(url: URL): void {
    if (this.expired(url)) throw new SignatureExpiredError(url.href, expiryOf(url) as number);
  }

  /** True when upstream accepted `url` and that still holds now (no request). */
  allowed(url: URL): boolean {
    const until = this.#accepted.get(url.href);
    return until !== undefined && this.#now() < until;
  }

  /** Upstream answered a request made with `url` with the object: remembered as accepted. */
  accepted(url: URL): void {
    const until = this.#until(url);
    if (this.#now() >= until) return;
    this.#refused.delete(url.href);
    remember(this.#accepted, url.href, until, this.#max);
  }

  /**
   * Settles when `url` may be served now: at once when remembered, else after one request
   * upstream (shared by every caller meanwhile). Throws ERR_SIGNATURE_EXPIRED for a past `exp`,
   * or upstream's refusal.
   */
  check(url: URL): Promise<void> {
    try {
      this.refuseExpired(url);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.allowed(url)) return Promise.resolve();
    const key = url.href;
    const refused = this.#refused.get(key);
    if (refused && this.#now() < refused.until) return Promise.reject(refused.err);
    let p = this.#checking.get(key);
    if (!p) {
      p = this.#o.validate(url).then(
        () => {
          this.#checking.delete(key);
          this.accepted(url);
        },
        (err: unknown) => {
          this.#checking.delete(key);
          // A refusal of the URL itself stands; a failure to get an answer is not remembered.
          if (err instanceof UpstreamStatusError && [401, 403].includes(err.upstreamStatus))
            remember(this.#refused, key, { err, until: this.#until(url) }, this.#max);
          throw err;
        },
      );
      this.#checking.set(key, p);
    }
    return p;
  }

  /** URLs remembered as accepted now (for the stats). */
  get size(): number {
    return this.#accepted.size;
  }

  /** How long an answer about `url` holds: to the end of its `exp` second, or `grantMs` from now. */
  #until(url: URL): number {
    const exp = expiryOf(url);
    return exp !== undefined ? (exp + 1) * 1000 : this.#now() + this.#o.grantMs;
  }
}

/** Sets `key` (moved to the newest end), dropping the oldest entry past `max`. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as string);
  map.set(key, value);
}
