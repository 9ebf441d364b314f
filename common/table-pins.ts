/**
 * The etags of a table whose pages keep them apart (page format 3, page-pins.ts): fetched
 * page by page when a reader first needs one of the page's objects, checked against the
 * digest the signed head names, and kept for the last PINS_KEPT pages read (≈ 16 KB a page),
 * so memory stays bounded whatever the table's size.
 */
import { PinsNotReadyError, type EntryColumns, type PinLookup } from "./dataset-table/entry-columns.js";
import { MAX_PAGES_PER_REQUEST } from "./dataset-table/page-frames.js";
import { decodePins, type PagePins } from "./dataset-table/page-pins.js";
import { ManifestError, ManifestErrorCode } from "./manifest-sign.js";
import type { TablePageRefV1 } from "./schema/index.js";

/** Pages whose pins are kept: 256 × 1000 MD5s ≈ 4 MB, far more than a prefetch window touches. */
export const PINS_KEPT = 256;

/** One page's run of a table's entries: from `start` (in the table), `count` of them, from entry `from` of the page. */
export interface PinPart {
  readonly ref: TablePageRefV1;
  readonly start: number;
  readonly count: number;
  readonly from: number;
  /** The run's own columns where its etags are inside them (a page of format 1 or 2, or one stored as JSON). */
  readonly inline?: EntryColumns | undefined;
}

export class TablePins implements PinLookup {
  private readonly kept = new Map<number, PagePins>();
  private readonly loading = new Map<number, Promise<void>>();
  /** Pages whose pins were fetched (and checked): what a reader's objects cost beyond open(). */
  fetched = 0;

  /**
   * `load` gives a page's pins as stored (decompressed); `digest` is the head's page digest
   * (base64url SHA-256).
   */
  constructor(
    /** The table's runs of entries, one a page, in order. */
    readonly parts: readonly PinPart[],
    private readonly load: (ref: TablePageRefV1) => Promise<Uint8Array>,
    private readonly digest: (bytes: Uint8Array) => string | Promise<string>,
    private readonly many?: (names: readonly string[]) => Promise<Uint8Array[] | undefined>,
    private readonly capacity = PINS_KEPT,
  ) {}

  /** The part entry i of the table falls in. */
  private partOf(i: number): number {
    let lo = 0;
    let hi = this.parts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.parts[mid]!.start <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  etag(i: number): string {
    const p = this.partOf(i);
    const part = this.parts[p]!;
    if (part.inline) return part.inline.etag(i - part.start);
    const pins = this.kept.get(p);
    if (!pins) throw new PinsNotReadyError(i);
    return pins.etag(part.from + i - part.start);
  }

  ready(i: number): Promise<void> {
    return this.readyPart(this.partOf(i));
  }

  /**
   * Fetches the pins of parts `ps` that are not kept, MAX_PAGES_PER_REQUEST pages a request
   * where the store can (else one a request), at most `capacity` of them.
   */
  async readyParts(ps: readonly number[]): Promise<void> {
    const wanted = ps.filter((p) => !this.parts[p]!.inline && !this.kept.has(p) && !this.loading.has(p));
    if (wanted.length > this.capacity)
      throw new RangeError(`Expected at most ${this.capacity} pages' pins at once but received ${wanted.length}`);
    for (let i = 0; this.many && i < wanted.length; i += MAX_PAGES_PER_REQUEST) {
      const batch = wanted.slice(i, i + MAX_PAGES_PER_REQUEST);
      if (batch.length < 2) break;
      const got = await this.many(batch.map((p) => this.parts[p]!.ref.name));
      if (!got) break;
      this.fetched += batch.length;
      for (const [k, p] of batch.entries()) this.keep(p, await this.check(this.parts[p]!.ref, got[k]!));
    }
    await Promise.all(ps.map((p) => this.readyPart(p)));
  }

  private keep(p: number, pins: PagePins): void {
    this.kept.set(p, pins);
    if (this.kept.size > this.capacity) this.kept.delete(this.kept.keys().next().value!);
  }

  /** Fetches part p's pins unless kept (once, however many readers ask at the same time). */
  readyPart(p: number): Promise<void> {
    const part = this.parts[p]!;
    if (part.inline) return Promise.resolve();
    const kept = this.kept.get(p);
    if (kept) {
      // Most recently used last: the oldest goes first.
      this.kept.delete(p);
      this.kept.set(p, kept);
      return Promise.resolve();
    }
    let loading = this.loading.get(p);
    if (!loading) {
      loading = this.fetch(part).then(
        (pins) => {
          this.loading.delete(p);
          this.keep(p, pins);
        },
        (err: unknown) => {
          // Not remembered: the next reader of the page asks again.
          this.loading.delete(p);
          throw err;
        },
      );
      this.loading.set(p, loading);
    }
    return loading;
  }

  private async fetch(part: PinPart): Promise<PagePins> {
    const ref = part.ref;
    if (ref.pins === undefined)
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `Table page ${ref.name} keeps its etags apart but its head names no pins`,
      );
    const bytes = await this.load(ref);
    this.fetched++;
    return this.check(ref, bytes);
  }

  /** Pins checked against the digest the signed head names, then decoded. */
  private async check(ref: TablePageRefV1, bytes: Uint8Array): Promise<PagePins> {
    if ((await this.digest(bytes)) !== ref.pins)
      throw new ManifestError(
        ManifestErrorCode.SIGNATURE,
        `Table pins of page ${ref.name} do not match the digest its signed head names`,
      );
    return decodePins(bytes, ref.count);
  }
}
