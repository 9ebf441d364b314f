import { CacheArgumentError, UpstreamNotAllowedError } from "../errors.js";
import { describeReceived } from "../../common/errors.js";

/**
 * The configured upstreams: the only places the cache fetches from, so it is never an open proxy.
 * An upstream with a path (https://edge.example/v1/objects/) also bounds the path.
 */
/** URLs remembered as checked: a plan restates its window's signed URLs every few clips. */
const REMEMBERED = 4096;

export class AllowList {
  readonly #bases: URL[];
  /** Allowed URLs by their text, so a repeated one is not parsed again (callers never mutate them). */
  readonly #checked = new Map<string, URL>();

  constructor(upstreams: readonly string[]) {
    this.#bases = upstreams.map((u) => parseHttpUrl(u, "upstream"));
  }

  /** Parses `raw` and returns it when it lies under a configured upstream, else throws ERR_UPSTREAM_NOT_ALLOWED. */
  check(raw: string): URL {
    const known = this.#checked.get(raw);
    if (known) return known;
    const url = parseHttpUrl(raw, "url");
    const ok = this.#bases.some(
      (b) => b.origin === url.origin && url.pathname.startsWith(b.pathname) && !url.username && !url.password,
    );
    if (!ok) throw new UpstreamNotAllowedError(raw, this.origins);
    if (this.#checked.size >= REMEMBERED) this.#checked.delete(this.#checked.keys().next().value as string);
    this.#checked.set(raw, url);
    return url;
  }

  get origins(): string[] {
    return [...new Set(this.#bases.map((b) => b.origin))];
  }
}

function parseHttpUrl(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new CacheArgumentError(`Expected an absolute http(s) URL for ${what} but received ${describeReceived(raw)}`, {
      cause,
    });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CacheArgumentError(`Expected an http: or https: URL for ${what} but received ${url.protocol}`);
  }
  // A dot segment could climb out of the upstream's path prefix.
  if (/(^|\/)\.\.?(\/|$)|%2e%2e/i.test(url.pathname)) {
    throw new CacheArgumentError(
      `Expected a URL without dot segments for ${what} but received ${JSON.stringify(url.pathname)}`,
    );
  }
  return url;
}
