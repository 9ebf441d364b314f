/**
 * The origin-cache's local data plane, client side: on the cache's own host the bytes need not
 * cross HTTP. `POST /v1/locate` names where a span lies in the cache's slab files under a lease;
 * this reads those runs itself (pread, one file descriptor per slab, kept open), checks what a
 * GET would (the version, every byte present, the lease still held), and ends the lease: with
 * its next locate, or by DELETE /v1/lease/{id} when no locate follows soon.
 * The spans of a plan window are located ahead, in one long-polled batched locate whose answer
 * streams in as the spans are stored (locate-ahead.ts); a read that no located span holds is
 * located on its own. Anything else (an error answer, an
 * unreadable slab directory, a short read) is a miss, and the caller reads the span with GET
 * /v1/fetch.
 */
import { close, open, read, readv } from "node:fs";
import { request, type Dispatcher } from "undici";
import {
  type LocateBatchLine,
  LocateResponse,
  type LocateRun,
  type LocateSpan,
} from "../../common/schema/cache-locate.js";
import { readCompactLine } from "./compact-lines.js";
import { ObjectIdClient } from "./object-ids.js";
import { LocateAhead, sliceRuns, type PlannedSpan } from "./locate-ahead.js";
import { ReadPool, releaseRead } from "../../common/read-pool.js";

/** Runs of one slab read with one preadv: each run's place in the span and the bytes before it. */
interface Group {
  readonly fd: number;
  readonly position: number;
  end: number;
  readonly runs: { readonly at: number; readonly length: number; readonly gap: number }[];
}

/**
 * How long a plan window's batch waits for its spans to be stored: past it a span is read the
 * per-read way, which waits for the same pull. Long enough for a cold window over a slow link.
 */
const BATCH_WAIT_MS = 20_000;

/** Longest close waits for the cache to end its client's leases. */
const CLOSE_RELEASE_MS = 5_000;
/** A lease done with waits this long for a locate to carry its release before it is DELETEd. */
const RELEASE_AFTER_MS = 50;

/** True for a cache URL on this host's loopback, the only place where its slab paths mean anything. */
export function isLoopback(base: string): boolean {
  const host = new URL(base).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Whether a client of the cache at `base` should try the local data plane: only on loopback, and
 * not where `option` is false (resolveOptions makes it false for EC_CACHE_LOCAL=0).
 */
export function wantsLocalPlane(base: string, option: boolean | undefined): boolean {
  return option !== false && isLoopback(base);
}

function preadOnce(fd: number, into: Buffer, at: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, into, at, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
}

/** Most bytes between two runs of one slab read with one preadv (the gap lands in scratch memory): a slot header and its padding. */
const MAX_GAP = 64 << 10;
/** Most runs in one preadv: two iovecs each, under IOV_MAX (1024). */
const MAX_RUNS = 256;

function preadv(fd: number, into: Buffer[], position: number): Promise<number> {
  return new Promise((resolve, reject) => readv(fd, into, position, (err, n) => (err ? reject(err) : resolve(n))));
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
  /** The same descriptors once open, so a read need not wait a turn for each. */
  readonly #open = new Map<string, number>();
  /** Where the bytes between runs land (never read). */
  #gap = Buffer.alloc(0);
  /** Set when a slab could not be opened (another user's cache, another host's path): GET from then on. */
  #off = false;
  #closed = false;
  /** Whether a batch named this plane's client to the cache (whose leases close then ends). */
  #batched = false;
  /** Reads not yet returned: close ends the client's leases after them. */
  readonly #reads = new Set<Promise<Uint8Array | undefined>>();
  /** Leases done with, not yet released: the next locate carries them. */
  #done: string[] = [];
  /** Leases a batch's answer handed to this plane's client: the client-wide release at close ends them. */
  readonly #batchLeases = new Set<string>();
  /** The same leases, let go at close: DELETEd one by one only where the cache has no client-wide release. */
  #closingLeases: string[] = [];
  #flushing: NodeJS.Timeout | undefined;
  readonly #ahead = new LocateAhead(
    (spans, answer, signal) => this.#locateMany(spans, answer, signal),
    (id) => this.#release(id),
  );
  /** Spans read from the slabs, and spans that fell back to GET. */
  hits = 0;
  fallbacks = 0;
  /** Locate requests sent: one per plan window's batch, one per span read that no batch located. */
  locates = 0;
  /** Requests sent only to end leases (DELETE): none while locates carry the releases, one at close. */
  releases = 0;

  /**
   * `root`: the cache's base URL, no trailing slash; `pool`: where span reads get their memory
   * (see releaseRead); `ids`: the objects' ids at the cache, shared with the client's plans.
   */
  constructor(
    root: string,
    agent: Dispatcher,
    readonly pool = new ReadPool(),
    readonly ids = new ObjectIdClient(`plane:${process.pid}:${Math.random().toString(36).slice(2)}`),
  ) {
    this.#root = root;
    this.#agent = agent;
  }

  /** The plan window (soonest first): its stored spans are located now, in one request. */
  plan(spans: readonly PlannedSpan[]): void {
    if (this.enabled) this.#ahead.plan(spans);
  }

  /** One long-polled batch: each line of its answer handed to `answer` as it comes. */
  async #locateMany(
    spans: readonly LocateSpan[],
    answer: (line: LocateBatchLine) => void,
    signal: AbortSignal,
  ): Promise<void> {
    this.#batched = true;
    const res = await this.ids.send(spans, (ref) =>
      this.#post(
        {
          client: this.ids.client,
          ...(ref.objects.length > 0 ? { objects: ref.objects } : {}),
          spans: spans.map((s, i) =>
            s.min === undefined
              ? { object: ref.ids[i]!, offset: s.offset, length: s.length }
              : { object: ref.ids[i]!, offset: s.offset, length: s.length, min: s.min },
          ),
          waitMs: BATCH_WAIT_MS,
          form: "compact",
        },
        signal,
      ),
    );
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      throw new Error(`POST /v1/locate answered ${res.statusCode}`);
    }
    let rest = "";
    for await (const chunk of res.body) {
      const text = rest + (chunk as Buffer).toString("utf8");
      const lines = text.split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        if (line.length === 0) continue;
        const read = readCompactLine(line);
        if (read.lease) this.#batchLeases.add(read.lease.id);
        answer(read);
      }
    }
  }

  #post(body: object, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    this.locates++;
    return request(`${this.#root}/v1/locate`, {
      dispatcher: this.#agent,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(this.#done.length > 0 ? { ...body, release: this.#done.splice(0, 1024) } : body),
      ...(signal ? { signal } : {}),
    });
  }

  get enabled(): boolean {
    return !this.#off && !this.#closed;
  }

  /** The span's bytes read from the slabs, or undefined when the caller must GET them. */
  async read(url: string, offset: number, length: number, etag: string | undefined): Promise<Uint8Array | undefined> {
    const reading = this.#read(url, offset, length, etag);
    this.#reads.add(reading);
    try {
      return await reading;
    } finally {
      this.#reads.delete(reading);
    }
  }

  async #read(url: string, offset: number, length: number, etag: string | undefined): Promise<Uint8Array | undefined> {
    if (!this.enabled || length === 0) return undefined;
    const span = { url, ...(etag === undefined ? {} : { etag }), offset, length };
    const bytes = await this.#readAhead(span, length, etag);
    if (bytes) return bytes;
    if (!this.enabled) return this.#miss();
    const wide = this.#ahead.wider(span);
    let located: LocateResponse;
    try {
      const res = await this.#post(wide ?? span);
      if (res.statusCode !== 200) {
        await res.body.dump();
        return this.#miss();
      }
      located = LocateResponse.parse(await res.body.json());
    } catch {
      return this.#miss();
    }
    if (wide && this.#ahead.adopt(wide, located)) return (await this.#readAhead(span, length, etag)) ?? this.#miss();
    try {
      const runs = wide ? sliceRuns(located.runs, offset - wide.offset, length) : located.runs;
      return (await this.#readRuns({ ...located, runs }, length, etag)) ?? this.#miss();
    } finally {
      this.#release(located.lease.id);
    }
  }

  /** The span read from where a locate made ahead (or adopted) says it lies; undefined when none serves it. */
  async #readAhead(span: LocateSpan, length: number, etag: string | undefined): Promise<Uint8Array | undefined> {
    const ahead = await this.#ahead.take(span);
    if (!ahead) return undefined;
    try {
      return await this.#readRuns({ ...ahead.located, lease: ahead.lease }, length, etag);
    } finally {
      ahead.done();
    }
  }

  /** The bytes the runs hold, or undefined when they are not the span's (then the caller GETs it). */
  async #readRuns(located: LocateResponse, length: number, etag: string | undefined): Promise<Uint8Array | undefined> {
    // What a GET with If-Match and a Range checks: the version, and every byte of the span.
    if (etag !== undefined && located.etag !== etag) return undefined;
    if (located.runs.reduce((n, r) => n + r.length, 0) !== length) return undefined;
    const out = this.pool.take(length);
    try {
      const groups = await this.#groups(located.runs);
      const whole = await Promise.all(groups.map((g) => this.#readGroup(g, out)));
      if (!whole.every(Boolean)) return this.#discard(out);
    } catch (err) {
      // A slab this process may not open (permissions, another host's path): GET from now on.
      if (isOpenError(err)) this.#off = true;
      // Not handed back: other reads of the span may still be writing into it.
      return undefined;
    }
    // Past its lease the cache may have reused the slots while they were read.
    if (Date.now() >= located.lease.expiresAt) return this.#discard(out);
    this.hits++;
    return out;
  }

  /** The runs as groups to read with one preadv each: runs of one slab, in order, close together. */
  async #groups(runs: readonly LocateRun[]): Promise<Group[]> {
    const groups: Group[] = [];
    let at = 0;
    let g: Group | undefined;
    for (const run of runs) {
      const fd = this.#open.get(run.path) ?? (await this.#fd(run.path));
      const gap = g ? run.offset - g.end : -1;
      if (g && g.fd === fd && gap >= 0 && gap <= MAX_GAP && g.runs.length < MAX_RUNS) {
        g.runs.push({ at, length: run.length, gap });
        g.end = run.offset + run.length;
      } else {
        g = { fd, position: run.offset, end: run.offset + run.length, runs: [{ at, length: run.length, gap: 0 }] };
        groups.push(g);
      }
      at += run.length;
    }
    return groups;
  }

  /** One preadv for the group (the gaps into scratch memory); run by run should it come back short. */
  async #readGroup(g: Group, out: Buffer): Promise<boolean> {
    const first = g.runs[0]!;
    if (g.runs.length === 1) return preadFull(g.fd, out, first.at, first.length, g.position);
    const iov: Buffer[] = [];
    for (const r of g.runs) {
      if (r.gap > 0) iov.push(this.#scratch(r.gap));
      iov.push(out.subarray(r.at, r.at + r.length));
    }
    if ((await preadv(g.fd, iov, g.position)) === g.end - g.position) return true;
    let position = g.position;
    for (const r of g.runs) {
      position += r.gap;
      if (!(await preadFull(g.fd, out, r.at, r.length, position))) return false;
      position += r.length;
    }
    return true;
  }

  #scratch(bytes: number): Buffer {
    if (this.#gap.length < bytes) this.#gap = Buffer.allocUnsafe(MAX_GAP);
    return this.#gap.subarray(0, bytes);
  }

  /** A read that failed part-way: nothing else saw its buffer, so it goes straight back. */
  #discard(out: Buffer): undefined {
    releaseRead(out);
    return undefined;
  }

  #miss(): undefined {
    this.fallbacks++;
    return undefined;
  }

  #fd(path: string): Promise<number> {
    let fd = this.#fds.get(path);
    if (!fd) {
      fd = new Promise<number>((resolve, reject) =>
        open(path, "r", (err, n) => {
          if (err) return reject(Object.assign(err, { opening: true }));
          this.#open.set(path, n);
          resolve(n);
        }),
      );
      this.#fds.set(path, fd);
      fd.catch(() => this.#fds.get(path) === fd && this.#fds.delete(path));
    }
    return fd;
  }

  #release(id: string): void {
    // Closing, a batch's lease ends with the client's (DELETE /v1/leases), not a request of its own.
    if (this.#closed && this.#batchLeases.has(id)) {
      this.#closingLeases.push(id);
      return;
    }
    this.#batchLeases.delete(id);
    this.#done.push(id);
    if (this.#flushing) return;
    this.#flushing = setTimeout(() => void this.#flush(), RELEASE_AFTER_MS);
    this.#flushing.unref();
  }

  /** DELETEs the leases no locate carried; a failed DELETE leaves the lease to its expiry. */
  async #flush(): Promise<void> {
    clearTimeout(this.#flushing);
    this.#flushing = undefined;
    await this.#deleteEach(this.#done.splice(0));
  }

  async #deleteEach(ids: readonly string[]): Promise<void> {
    this.releases += ids.length;
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
    await this.#ahead.close();
    await this.#flush();
    // A batch's line on its way when the batch was aborted is lost, and with it the lease it
    // carried: the cache ends every lease it handed this client (a cache without the route: 404),
    // once no read is left under one.
    await Promise.allSettled([...this.#reads]);
    if (this.#batched) {
      this.releases++;
      const ended = await request(`${this.#root}/v1/leases?client=${encodeURIComponent(this.ids.client)}`, {
        dispatcher: this.#agent,
        method: "DELETE",
        // A cache that does not answer cannot hold close up: the leases then expire.
        signal: AbortSignal.timeout(CLOSE_RELEASE_MS),
      })
        .then(async (r) => {
          await r.body.dump();
          return r.statusCode !== 404;
        })
        .catch(() => true);
      // A cache without the route ends the leases one by one.
      if (!ended) await this.#deleteEach(this.#closingLeases);
      this.#closingLeases = [];
    }
    const fds = [...this.#fds.values()];
    this.#fds.clear();
    this.#open.clear();
    await Promise.all(
      fds.map((p) =>
        p.then(
          (fd) => new Promise<void>((r) => close(fd, () => r())),
          () => undefined,
        ),
      ),
    );
  }
}

function isOpenError(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { opening?: boolean }).opening === true;
}
