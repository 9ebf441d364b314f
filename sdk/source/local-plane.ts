/**
 * The origin-cache's local data plane, client side: on the cache's own host the bytes need not
 * cross HTTP. `POST /v1/locate` names where a span lies in the cache's slab files under a lease;
 * this reads those runs itself (pread, one file descriptor per slab, kept open), checks what a
 * GET would (the version, every byte present, the lease still held), and ends the lease: with
 * its next locate, or by DELETE /v1/lease/{id} when no locate follows soon.
 * Anything else (an error answer, an unreadable slab directory, a short read) is a miss, and
 * the caller reads the span with GET /v1/fetch.
 */
import { close, open, read } from "node:fs";
import { request, type Dispatcher } from "undici";
import { LocateResponse } from "../../common/schema/cache-locate.js";

/** A lease done with waits this long for a locate to carry its release before it is DELETEd. */
const RELEASE_AFTER_MS = 50;

/** `EC_CACHE_LOCAL=0` turns the local data plane off for every client of this process. */
export const LOCAL_PLANE_ENV = "EC_CACHE_LOCAL";

/** True for a cache URL on this host's loopback, the only place where its slab paths mean anything. */
export function isLoopback(base: string): boolean {
  const host = new URL(base).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Whether a client of the cache at `base` should try the local data plane: `option` first, then EC_CACHE_LOCAL, then loopback. */
export function wantsLocalPlane(base: string, option: boolean | undefined, env = process.env): boolean {
  if (option !== undefined) return option && isLoopback(base);
  return env[LOCAL_PLANE_ENV] !== "0" && isLoopback(base);
}

function preadOnce(fd: number, into: Buffer, at: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, into, at, length, position, (err, n) => (err ? reject(err) : resolve(n))));
}

/** Reads exactly `length` bytes at `position`; false when the file ends first. */
async function preadFull(fd: number, into: Buffer, at: number, length: number, position: number): Promise<boolean> {
  let got = 0;
  while (got < length) {
    const n = await preadOnce(fd, into, at + got, length - got, position + got);
    if (n === 0) return false;
    got += n;
  }
  return true;
}

export class LocalPlane {
  readonly #root: string;
  readonly #agent: Dispatcher;
  readonly #fds = new Map<string, Promise<number>>();
  /** Set when a slab could not be opened (another user's cache, another host's path): GET from then on. */
  #off = false;
  #closed = false;
  /** Leases done with, not yet released: the next locate carries them. */
  #done: string[] = [];
  #flushing: NodeJS.Timeout | undefined;
  /** Spans read from the slabs, and spans that fell back to GET. */
  hits = 0;
  fallbacks = 0;

  /** `root`: the cache's base URL, no trailing slash. */
  constructor(root: string, agent: Dispatcher) {
    this.#root = root;
    this.#agent = agent;
  }

  get enabled(): boolean {
    return !this.#off && !this.#closed;
  }

  /** The span's bytes read from the slabs, or undefined when the caller must GET them. */
  async read(url: string, offset: number, length: number, etag: string | undefined): Promise<Uint8Array | undefined> {
    if (!this.enabled || length === 0) return undefined;
    let located: LocateResponse;
    try {
      const res = await request(`${this.#root}/v1/locate`, {
        dispatcher: this.#agent,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url, ...(etag === undefined ? {} : { etag }), offset, length, ...(this.#done.length > 0 ? { release: this.#done.splice(0, 1024) } : {}) }),
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        return this.#miss();
      }
      located = LocateResponse.parse(await res.body.json());
    } catch {
      return this.#miss();
    }
    try {
      return await this.#readRuns(located, length, etag);
    } finally {
      this.#release(located.lease.id);
    }
  }

  async #readRuns(located: LocateResponse, length: number, etag: string | undefined): Promise<Uint8Array | undefined> {
    // What a GET with If-Match and a Range checks: the version, and every byte of the span.
    if (etag !== undefined && located.etag !== etag) return this.#miss();
    if (located.runs.reduce((n, r) => n + r.length, 0) !== length) return this.#miss();
    const out = Buffer.allocUnsafeSlow(length);
    let at = 0;
    const reads: Promise<boolean>[] = [];
    try {
      for (const run of located.runs) {
        const fd = await this.#fd(run.path);
        reads.push(preadFull(fd, out, at, run.length, run.offset));
        at += run.length;
      }
      const whole = await Promise.all(reads);
      if (!whole.every(Boolean)) return this.#miss();
    } catch (err) {
      // A slab this process may not open (permissions, another host's path): GET from now on.
      if (isOpenError(err)) this.#off = true;
      return this.#miss();
    }
    // Past its lease the cache may have reused the slots while they were read.
    if (Date.now() >= located.lease.expiresAt) return this.#miss();
    this.hits++;
    return out;
  }

  #miss(): undefined {
    this.fallbacks++;
    return undefined;
  }

  #fd(path: string): Promise<number> {
    let fd = this.#fds.get(path);
    if (!fd) {
      fd = new Promise<number>((resolve, reject) => open(path, "r", (err, n) => (err ? reject(Object.assign(err, { opening: true })) : resolve(n))));
      this.#fds.set(path, fd);
      fd.catch(() => this.#fds.get(path) === fd && this.#fds.delete(path));
    }
    return fd;
  }

  #release(id: string): void {
    this.#done.push(id);
    if (this.#flushing) return;
    this.#flushing = setTimeout(() => void this.#flush(), RELEASE_AFTER_MS);
    this.#flushing.unref();
  }

  /** DELETEs the leases no locate carried; a failed DELETE leaves the lease to its expiry. */
  async #flush(): Promise<void> {
    clearTimeout(this.#flushing);
    this.#flushing = undefined;
    const ids = this.#done.splice(0);
    await Promise.all(
      ids.map((id) =>
        request(`${this.#root}/v1/lease/${encodeURIComponent(id)}`, { dispatcher: this.#agent, method: "DELETE" })
          .then((r) => r.body.dump())
          .catch(() => undefined),
      ),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#flush();
    const fds = [...this.#fds.values()];
    this.#fds.clear();
    await Promise.all(fds.map((p) => p.then((fd) => new Promise<void>((r) => close(fd, () => r())), () => undefined)));
  }
}

function isOpenError(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { opening?: boolean }).opening === true;
}
