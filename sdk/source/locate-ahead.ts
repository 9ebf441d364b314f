/**
 * The local data plane's locates made ahead: the spans of a plan window are located in one
 * batched `POST /v1/locate` (stored spans only: nothing is pulled for it), under one lease per
 * batch, so a warm read costs a pread and no request. The lease ends when every span of its
 * batch was read, left the plan, or could not be located.
 */
import type { LocateBatchResponse, LocatedSpan, Lease, LocateSpan } from "../../common/schema/cache-locate.js";
import { LOCATE_MAX_SPANS } from "../../common/schema/cache-locate.js";

interface Batch {
  lease: Lease | undefined;
  /** Spans of the batch not yet read, dropped or found missing. */
  open: number;
  released: boolean;
}

interface Ahead {
  readonly batch: Batch;
  /** Resolves once the batch is answered; `located` is set then (null: not stored). */
  readonly ready: Promise<void>;
  located: LocatedSpan | null | undefined;
  done: boolean;
}

/** A span located ahead, with the lease it is read under. */
export interface Located {
  readonly span: LocatedSpan;
  readonly lease: Lease;
  /** Call once its bytes were read (or given up on): the lease may end. */
  readonly done: () => void;
}

function spanKey(s: LocateSpan): string {
  return `${s.offset}:${s.length}:${s.etag ?? ""}:${s.url}`;
}

export class LocateAhead {
  readonly #spans = new Map<string, Ahead>();
  /** Spans already read: a window restates them (they may still be in flight), and they are not located again. */
  #taken = new Set<string>();
  readonly #pending = new Set<Promise<void>>();
  #closed = false;

  constructor(
    private readonly locate: (spans: readonly LocateSpan[]) => Promise<LocateBatchResponse>,
    private readonly release: (leaseId: string) => void,
  ) {}

  /** The plan window now (soonest first): new spans are located, spans no longer in it let go. */
  plan(spans: readonly LocateSpan[]): void {
    if (this.#closed) return;
    const wanted = new Set<string>();
    const fresh: LocateSpan[] = [];
    for (const s of spans) {
      const k = spanKey(s);
      if (s.length === 0 || wanted.has(k)) continue;
      wanted.add(k);
      if (!this.#spans.has(k) && !this.#taken.has(k)) fresh.push(s);
    }
    this.#taken = new Set([...this.#taken].filter((k) => wanted.has(k)));
    for (const [k, a] of this.#spans) {
      if (wanted.has(k)) continue;
      this.#spans.delete(k);
      this.#done(a);
    }
    for (let i = 0; i < fresh.length; i += LOCATE_MAX_SPANS) this.#batch(fresh.slice(i, i + LOCATE_MAX_SPANS));
  }

  /** The span's location if it was located ahead (waiting for its batch's answer); undefined otherwise. */
  async take(s: LocateSpan): Promise<Located | undefined> {
    const k = spanKey(s);
    const a = this.#spans.get(k);
    if (!a) return undefined;
    this.#spans.delete(k);
    this.#taken.add(k);
    await a.ready;
    const lease = a.batch.lease;
    if (!a.located || !lease) {
      this.#done(a);
      return undefined;
    }
    return { span: a.located, lease, done: () => this.#done(a) };
  }

  /** Lets every lease go; later plans locate nothing. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#pending);
    for (const a of this.#spans.values()) this.#done(a);
    this.#spans.clear();
  }

  #batch(spans: LocateSpan[]): void {
    const batch: Batch = { lease: undefined, open: spans.length, released: false };
    const entries: Ahead[] = [];
    const ready = this.locate(spans).then(
      (res) => {
        batch.lease = res.lease;
        entries.forEach((a, i) => {
          a.located = res.spans[i] ?? null;
          if (!a.located) this.#done(a);
        });
        // Every span let go before the answer came (or the plane closed): end the lease now.
        if (batch.open === 0 || this.#closed) this.#end(batch);
      },
      () => {
        for (const a of entries) {
          a.located = null;
          this.#done(a);
        }
      },
    );
    const pending = ready.finally(() => this.#pending.delete(pending));
    this.#pending.add(pending);
    for (const s of spans) {
      const a: Ahead = { batch, ready, located: undefined, done: false };
      entries.push(a);
      this.#spans.set(spanKey(s), a);
    }
  }

  #done(a: Ahead): void {
    if (a.done) return;
    a.done = true;
    if (--a.batch.open === 0) this.#end(a.batch);
  }

  #end(batch: Batch): void {
    if (!batch.lease || batch.released) return;
    batch.released = true;
    this.release(batch.lease.id);
  }
}
