/**
 * The local data plane's locates made ahead: the spans of a plan window are located in one
 * long-polled batched `POST /v1/locate`: the cache answers the spans stored now at once, under one
 * lease, and pulls the others, answering each under a lease of its own once it is stored. A read
 * (the whole span, or any part of it, as a GOP run reads it) waits for its span's answer and
 * costs a pread and no request, warm or cold. A span the cache could not get (or not within the
 * wait) is read the per-read way, and asked for again with the next window. A lease ends once
 * each span it holds has left the plan and no read of it is in flight.
 */
import type {
  LocateBatchLine,
  LocatedSpan,
  Lease,
  LocateResponse,
  LocateRun,
  LocateSpan,
} from "../../common/schema/cache-locate.js";
import { LOCATE_MAX_SPANS } from "../../common/schema/cache-locate.js";

/**
 * Bytes located past a planned span's end (within the object): a planned span holds the samples
 * a GOP run offers past its clip (gop-decode.ts runSpan), but a decoder that waits longer for its
 * last frame reads further, and those reads should hit too.
 * Only the planned span must be stored (`min`): the slack is located as far as the cache has it.
 */
const READ_SLACK = 64 << 10;

/** A planned span; `size`, the object's, lets the span be located with READ_SLACK. */
export type PlannedSpan = LocateSpan & { readonly size?: number };

/** A lease with less than this left is renewed with the next window rather than read under. */
const LEASE_MARGIN_MS = 5_000;

interface Batch {
  lease: Lease | undefined;
  /** Spans of the batch still in the plan. */
  open: number;
  /** Reads of its slots in flight: the lease outlives them. */
  readers: number;
  released: boolean;
}

/** The plane's side of one long-polled batch: `answer` is called with each line as it comes. */
export type LocateLines = (
  spans: readonly LocateSpan[],
  answer: (line: LocateBatchLine) => void,
  signal: AbortSignal,
) => Promise<void>;

interface Ahead {
  readonly key: string;
  readonly object: string;
  /** The answer's lease it lies under (once answered), or that of a read's single locate of it (adopt). */
  batch: Batch | undefined;
  readonly offset: number;
  /** The planned bytes, without the read slack. */
  readonly planned: number;
  /** Asked for; once answered, what the answer holds (the planned span and what of the slack is stored). */
  length: number;
  /** Resolves once the span is answered; `located` is set then (null: not stored). */
  readonly ready: Promise<void>;
  readonly answered: () => void;
  located: LocatedSpan | null | undefined;
  /** Left the plan (or the plane closed). */
  done: boolean;
}

/** Where a read's bytes lie, under a lease; `done` once they were read (or given up on). */
export interface Located {
  readonly located: LocatedSpan;
  readonly lease: Lease;
  readonly done: () => void;
}

const objectKey = (s: LocateSpan): string => `${s.etag ?? ""}:${s.url}`;
const spanKey = (s: LocateSpan): string => `${s.offset}:${s.length}:${objectKey(s)}`;

/** The runs of `[from, from + length)` of a span whose bytes are `runs`, end to end. */
export function sliceRuns(runs: readonly LocateRun[], from: number, length: number): LocateRun[] {
  const out: LocateRun[] = [];
  let skip = from;
  let left = length;
  for (const r of runs) {
    if (left === 0) break;
    if (skip >= r.length) {
      skip -= r.length;
      continue;
    }
    const n = Math.min(r.length - skip, left);
    out.push({ path: r.path, offset: r.offset + skip, length: n });
    skip = 0;
    left -= n;
  }
  return out;
}

export class LocateAhead {
  readonly #spans = new Map<string, Ahead>();
  /** The same entries by object, to find the span a read lies in. */
  readonly #byObject = new Map<string, Ahead[]>();
  readonly #pending = new Set<Promise<void>>();
  /** Ends the batches still waiting for spans when the plane closes. */
  readonly #abort = new AbortController();
  #closed = false;

  constructor(
    private readonly locate: LocateLines,
    private readonly release: (leaseId: string) => void,
  ) {}

  /** The plan window now (soonest first): new spans are located, spans no longer in it let go. */
  plan(spans: readonly PlannedSpan[]): void {
    if (this.#closed) return;
    const wanted = new Map<string, LocateSpan>();
    for (const p of spans) {
      if (p.length <= 0) continue;
      const length =
        p.size === undefined ? p.length : Math.max(p.length, Math.min(p.size - p.offset, p.length + READ_SLACK));
      const s: LocateSpan = {
        url: p.url,
        ...(p.etag === undefined ? {} : { etag: p.etag }),
        offset: p.offset,
        length,
        ...(length > p.length ? { min: p.length } : {}),
      };
      wanted.set(spanKey(s), s);
    }
    const fresh: LocateSpan[] = [];
    for (const [k, a] of this.#spans) {
      if (!wanted.has(k) || this.#stale(a)) this.#drop(a);
    }
    for (const [k, s] of wanted) if (!this.#spans.has(k)) fresh.push(s);
    for (let i = 0; i < fresh.length; i += LOCATE_MAX_SPANS) this.#batch(fresh.slice(i, i + LOCATE_MAX_SPANS));
  }

  /** Where `s` lies if a span located ahead holds it (waiting for its batch's answer); undefined otherwise. */
  async take(s: LocateSpan): Promise<Located | undefined> {
    const end = s.offset + s.length;
    const holding = (this.#byObject.get(objectKey(s)) ?? []).filter(
      (x) => x.offset <= s.offset && end <= x.offset + x.length,
    );
    // One already located, else one whose answer is on its way.
    const a = holding.find((x) => x.located) ?? holding.find((x) => x.located === undefined);
    if (!a) return undefined;
    await a.ready;
    const { batch, located } = a;
    // Dropped meanwhile (its lease may be over), or the read runs past what of the slack is stored.
    if (a.done || !located || !batch?.lease || batch.released || end > a.offset + a.length) return undefined;
    batch.readers++;
    return {
      located: { ...located, runs: sliceRuns(located.runs, s.offset - a.offset, s.length) },
      lease: batch.lease,
      done: () => {
        batch.readers--;
        this.#maybeEnd(batch);
      },
    };
  }

  /**
   * What to locate for a read that no located span serves: the planned span it starts in, whole
   * (the cache pulls what it lacks), so that span's later reads (the rest of a GOP run) need no
   * locate of their own; undefined when it starts in no planned span already answered.
   */
  wider(s: LocateSpan): LocateSpan | undefined {
    const a = this.#unserved(s.url, s.etag, s.offset);
    if (!a) return undefined;
    const end = Math.max(s.offset + s.length, a.offset + a.planned);
    return { ...s, offset: a.offset, length: end - a.offset };
  }

  /**
   * Keeps a single locate of `wider`'s span as that span's answer, under the locate's own lease
   * (ended as a batch's is); false when the span left the plan or was answered meanwhile: the
   * caller then reads under the lease and ends it.
   */
  adopt(span: LocateSpan, located: LocateResponse): boolean {
    const a = this.#unserved(span.url, span.etag, span.offset);
    const length = located.runs.reduce((n, r) => n + r.length, 0);
    if (!a || a.offset !== span.offset || this.#closed || (a.located && length <= a.length)) return false;
    const { lease, ...where } = located;
    this.#leave(a);
    a.batch = { lease, open: 1, readers: 0, released: false };
    a.located = where;
    a.length = length;
    return true;
  }

  /** The answered span in the plan that `offset` starts in (none stored, or too little of it). */
  #unserved(url: string, etag: string | undefined, offset: number): Ahead | undefined {
    const list = this.#byObject.get(
      objectKey(etag === undefined ? { url, offset, length: 0 } : { url, etag, offset, length: 0 }),
    );
    return list?.find((x) => !x.done && x.located !== undefined && x.offset <= offset && offset < x.offset + x.planned);
  }

  /** Lets every lease go (each once its reads in flight end); later plans locate nothing. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort();
    await Promise.all(this.#pending);
    for (const a of this.#spans.values()) this.#drop(a);
  }

  /** Not stored when located, or its lease nearly over: asked for again. */
  #stale(a: Ahead): boolean {
    if (a.located === undefined) return false;
    const lease = a.batch?.lease;
    return a.located === null || !lease || lease.expiresAt - Date.now() < LEASE_MARGIN_MS;
  }

  #batch(spans: LocateSpan[]): void {
    const entries = spans.map((s): Ahead => {
      let answered!: () => void;
      const ready = new Promise<void>((resolve) => {
        answered = resolve;
      });
      const a: Ahead = {
        key: spanKey(s),
        object: objectKey(s),
        batch: undefined,
        offset: s.offset,
        planned: s.min ?? s.length,
        length: s.length,
        ready,
        answered,
        located: undefined,
        done: false,
      };
      this.#spans.set(a.key, a);
      const list = this.#byObject.get(a.object);
      if (list) list.push(a);
      else this.#byObject.set(a.object, [a]);
      return a;
    });
    const answer = (line: LocateBatchLine): void => {
      const batch: Batch = { lease: line.lease, open: 0, readers: 0, released: false };
      line.at.forEach((i, k) => {
        const a = entries[i];
        if (!a || a.located !== undefined) return;
        const located = line.spans[k] ?? null;
        a.located = located;
        if (located) {
          a.length = located.runs.reduce((n, r) => n + r.length, 0);
          a.batch = batch;
          if (!a.done) batch.open++;
        }
        a.answered();
      });
      this.#maybeEnd(batch);
    };
    const pending = this.locate(spans, answer, this.#abort.signal)
      .catch(() => undefined)
      .then(() => {
        // Spans the answer left out (it failed, or the plane closed) are read the per-read way.
        for (const a of entries) {
          if (a.located !== undefined) continue;
          a.located = null;
          a.answered();
        }
        this.#pending.delete(pending);
      });
    this.#pending.add(pending);
  }

  #drop(a: Ahead): void {
    this.#spans.delete(a.key);
    const rest = (this.#byObject.get(a.object) ?? []).filter((x) => x !== a);
    if (rest.length > 0) this.#byObject.set(a.object, rest);
    else this.#byObject.delete(a.object);
    if (a.done) return;
    a.done = true;
    this.#leave(a);
  }

  /** The span no longer counts toward its lease's end (dropped, or located anew). */
  #leave(a: Ahead): void {
    if (!a.batch || !a.located) return;
    a.batch.open--;
    this.#maybeEnd(a.batch);
  }

  #maybeEnd(batch: Batch): void {
    if (!batch.lease || batch.released || batch.readers > 0 || (batch.open > 0 && !this.#closed)) return;
    batch.released = true;
    this.release(batch.lease.id);
  }
}
