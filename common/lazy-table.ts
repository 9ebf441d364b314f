/**
 * A dataset's table read page by page, as a lazy open() reads it: the verified head and the
 * page range under the dataset's prefix (at most two directory pages read), then each page only
 * when asked for, checked against the SHA-256 its directory names, cut at the prefix's edges,
 * its etags (pins) fetched per page as today. Pages are dropped on `evict`, or before by the
 * table's cache (`cache`, shared with the directory pages: `cache.limit` caps the bytes of both
 * held at once) and then read again when next asked for (`objects.load`); what is read is
 * counted in `requests`.
 */
import { compareKeys } from "./dataset-table/entry.js";
import { sha256 } from "./dataset-table/digest.js";
import type { EntryColumns } from "./dataset-table/entry-columns.js";
import { ManifestError, ManifestErrorCode } from "./manifest-sign.js";
import type { PublicKeysV1, TablePageRefV1 } from "./schema/index.js";
import { checkedPage, inside, openTable, type PageDigest, type TableStore, within } from "./table-client.js";
import type { TableCache } from "./table-cache.js";
import type { TablePageList } from "./table-page-list.js";
import { TablePins } from "./table-pins.js";

/**
 * Object ids a page spans: page k's objects are ids k × PAGE_IDS + place, so an id is known
 * before the pages in front of it are read (a page holds 1000 entries by default, and a page of
 * more than PAGE_IDS is refused).
 */
export const PAGE_IDS = 2 ** 20;

/** One page of the range, read: its ref, its entries under the prefix (pins wired), and where they start in the page. */
export interface LazyPage {
  readonly ref: TablePageRefV1;
  readonly entries: EntryColumns;
  readonly from: number;
}

/** An object of a page read (its entry's columns make it), as `objects.at(id)` gives it. */
export type LazyObject = NonNullable<ReturnType<EntryColumns["at"]>>;

export class LazyTable {
  private readonly kept = new Map<number, LazyPage>();
  private readonly reading = new Map<number, Promise<LazyPage>>();
  /** Pages fetched ahead of their reading (`prefetch`): their directory ref and bytes, not checked yet. */
  private readonly fetched = new Map<number, Promise<{ ref: TablePageRefV1; bytes: Uint8Array }>>();
  /** The columns each object handed out was made from (its page may be evicted since: they stay its own). */
  private readonly madeIn = new WeakMap<object, EntryColumns>();
  private readonly under: Uint8Array;
  /** 1 for each page the cache dropped (a read of it again is counted as such). */
  private readonly dropped: Uint8Array;
  private pageRequests = 0;
  private pinRequests = 0;
  /** The most pages kept at once so far. */
  peakPages = 0;
  /** Pages read (each read, a page read again after `evict` included), in order. */
  readonly read: number[] = [];

  private constructor(
    readonly list: TablePageList,
    private readonly store: TableStore,
    private readonly digest: PageDigest,
    /** "prefix/": the dataset's objects. */
    readonly dir: string,
    /** The range of the generation's pages that can hold a key under `dir`. */
    readonly range: { readonly from: number; readonly to: number },
  ) {
    this.under = new TextEncoder().encode(dir);
    this.dropped = new Uint8Array(this.pageCount);
  }

  /** The byte budget of the pages and directory pages held (the page list's). */
  get cache(): TableCache {
    return this.list.cache;
  }

  /**
   * The lazy table of `prefix` in `store` (latest generation, or `generation`), its head
   * verified against `keys`; undefined when the store has no table. Reads the head and at most
   * the two directory pages at the prefix's edges.
   *
   * @example
   * const table = await LazyTable.open(store, keys, "gameplay");
   * const page = await table.page(0);
   */
  static async open(
    store: TableStore,
    keys: Promise<PublicKeysV1>,
    prefix: string,
    generation?: number,
    digest: PageDigest = sha256,
  ): Promise<LazyTable | undefined> {
    const list = await openTable(store, keys, generation, digest);
    if (list === undefined) return undefined;
    const dir = `${prefix}/`;
    return new LazyTable(list, store, digest, dir, await list.rangeUnder(dir));
  }

  /** The generation read. */
  get generation(): number {
    return this.list.head.generation;
  }

  /** Pages of the range (the first and last may hold no key under the prefix). */
  get pageCount(): number {
    return this.range.to - this.range.from;
  }

  /** HTTP requests made: the head, directory pages, pages and their pins. */
  get requests(): number {
    return 1 + this.list.requests + this.pageRequests + this.pinRequests;
  }

  /** Pages kept now. */
  get keptPages(): readonly number[] {
    return [...this.kept.keys()];
  }

  /**
   * Page k of the range, read once (however many callers ask at the same time) and kept until
   * `evict(k)`: its SHA-256 checked against its directory's, its entries cut to the prefix.
   */
  page(k: number): Promise<LazyPage> {
    if (!Number.isInteger(k) || k < 0 || k >= this.pageCount)
      throw new RangeError(`Expected a page within [0, ${this.pageCount}) but received ${k}`);
    const kept = this.kept.get(k);
    if (kept) {
      this.cache.has(`p${k}`);
      return Promise.resolve(kept);
    }
    let reading = this.reading.get(k);
    if (!reading) {
      reading = this.readPage(k).then(
        ({ page: p, bytes }) => {
          this.reading.delete(k);
          const again = this.dropped[k] === 1;
          this.dropped[k] = 0;
          const drop = () => {
            this.kept.delete(k);
            this.dropped[k] = 1;
          };
          this.cache.admit(`p${k}`, "page", bytes, drop, again);
          this.kept.set(k, p);
          this.peakPages = Math.max(this.peakPages, this.kept.size);
          return p;
        },
        (err: unknown) => {
          // Not remembered: the next caller asks again.
          this.reading.delete(k);
          throw err;
        },
      );
      this.reading.set(k, reading);
    }
    return reading;
  }

  /** Drops page k (its entries and pins; objects made from it keep their own); a later ask reads it again. */
  evict(k: number): void {
    this.kept.delete(k);
    this.cache.forget(`p${k}`);
  }

  /**
   * Starts fetching page k's bytes (its directory page first, where not read) without checking or
   * decoding them: `page(k)` does that when asked, with these bytes. What the read-ahead window
   * asks for, so its decoding is not paid before the order reaches it. A failed fetch is asked
   * again by `page(k)`.
   */
  prefetch(k: number): void {
    if (this.kept.has(k) || this.reading.has(k) || this.fetched.has(k)) return;
    const fetching = this.fetchPage(k);
    fetching.catch(() => undefined);
    this.fetched.set(k, fetching);
  }

  /** Pages fetched ahead and not read yet. */
  get prefetchedPages(): readonly number[] {
    return [...this.fetched.keys()];
  }

  private async fetchPage(k: number): Promise<{ ref: TablePageRefV1; bytes: Uint8Array }> {
    const ref = (await this.list.pagesAt(this.range.from + k, this.range.from + k + 1))[0]!;
    this.pageRequests++;
    return { ref, bytes: await this.store.page(ref.name) };
  }

  private async readPage(k: number): Promise<{ page: LazyPage; bytes: number }> {
    const ahead = this.fetched.get(k);
    this.fetched.delete(k);
    const { ref, bytes } = await (ahead ? ahead.catch(() => this.fetchPage(k)) : this.fetchPage(k));
    this.read.push(k);
    const decoded = await checkedPage(ref, bytes, this.digest);
    if (decoded.length > PAGE_IDS)
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `Expected at most ${PAGE_IDS} entries in table page ${ref.name} but it holds ${decoded.length}`,
      );
    const [from, cut] = inside(ref, this.dir) ? [0, decoded] : within(decoded, this.under);
    let entries = cut;
    if (cut.apart) {
      const pins = new TablePins(
        [{ ref, start: 0, count: cut.length, from }],
        (r) => {
          if (!this.store.pins)
            throw new ManifestError(
              ManifestErrorCode.INVALID,
              `Table page ${r.name} keeps its etags apart but this store cannot read them`,
            );
          this.pinRequests++;
          // Charged to the page while the cache still holds it.
          return this.store.pins(r.name).then((pins) => {
            if (this.kept.get(k)?.ref === r) this.cache.grow(`p${k}`, pins.byteLength);
            return pins;
          });
        },
        this.digest,
      );
      entries = cut.withPins(pins);
    }
    return { page: { ref, entries, from }, bytes: bytes.byteLength };
  }

  /**
   * Objects by id (k × PAGE_IDS + place): `at`, an object of a page kept now, else undefined;
   * `load`, the object with its page read again where the cache dropped it. `length` is the id space.
   */
  readonly objects = {
    length: 0,
    at: (id: number): LazyObject | undefined => {
      const k = Math.floor(id / PAGE_IDS);
      const p = this.kept.get(k);
      if (p !== undefined) this.cache.has(`p${k}`);
      return this.made(p, id - k * PAGE_IDS);
    },
    load: async (id: number): Promise<LazyObject | undefined> => {
      const k = Math.floor(id / PAGE_IDS);
      return this.made(await this.page(k), id - k * PAGE_IDS);
    },
  };

  private made(p: LazyPage | undefined, place: number): LazyObject | undefined {
    const o = p?.entries.at(place);
    if (o) this.madeIn.set(o, p!.entries);
    return o;
  }

  /** The columns `object` is in: those it was made from, else a kept page's whose key range holds its key. */
  private columnsOf(object: { readonly key: string }): EntryColumns | undefined {
    const made = this.madeIn.get(object);
    if (made !== undefined) return made;
    for (const p of this.kept.values())
      if (compareKeys(p.ref.first, object.key) <= 0 && compareKeys(object.key, p.ref.last) <= 0) return p.entries;
    return undefined;
  }

  /**
   * The table's etag of `object` (its pins fetched where they are apart); undefined where no
   * page read holds its key (an object of this table is always made from a page read).
   */
  async etagOf(object: { readonly key: string }): Promise<string | undefined> {
    const entries = this.columnsOf(object);
    const i = entries?.entryOf(object);
    if (entries === undefined || i === undefined) return undefined;
    await entries.pinsReady(i);
    return entries.etag(i);
  }

  /** Resolves once `object.etag` can be read (its page's pins fetched where they are apart). */
  async objectPinned(object: { readonly key: string }): Promise<void> {
    await this.columnsOf(object)?.objectPinned(object);
  }
}
