/**
 * The one byte budget of a table read lazily: the table pages (LazyTable) and the directory
 * pages (TablePageList) it holds at once, each charged its bytes as read (decompressed; a page's
 * pins too, once fetched), the least recently used dropped first when an admission would pass
 * the cap. What is dropped is read again (and checked again) when next asked for. A cap that
 * cannot hold one window of pages (the order reads `window` pages at once) and a directory page
 * is refused with ERR_TABLE_CACHE_TOO_SMALL, naming the option to raise.
 */
import { EcError } from "./errors.js";

/** What is held: a table page or a directory page. */
export type TableCacheKind = "page" | "directory";

/** A cap that cannot hold one window of pages. */
export class TableCacheError extends EcError {
  constructor(message: string) {
    super("ERR_TABLE_CACHE_TOO_SMALL", message);
    this.name = "TableCacheError";
  }
}

/** What the cache holds and did, as `ds.stats().table_cache` reports it. */
export interface TableCacheStats {
  /** The cap in bytes (Infinity: none). */
  readonly cap: number;
  /** Bytes held now, of both kinds, and of each. */
  readonly bytes: number;
  readonly page_bytes: number;
  readonly directory_bytes: number;
  /** The most bytes held at once so far (both kinds together, and each kind). */
  readonly peak_bytes: number;
  readonly peak_page_bytes: number;
  readonly peak_directory_bytes: number;
  /** Pages and directory pages held now. */
  readonly pages: number;
  readonly directory_pages: number;
  /** Held items dropped to stay under the cap, by kind (a page dropped so is one its plan had not settled yet). */
  readonly evicted_pages: number;
  readonly evicted_directory_pages: number;
  /** Reads of pages and directory pages dropped under the cap and asked for again: the thrash a small cap costs. */
  readonly reread_pages: number;
  readonly reread_directory_pages: number;
}

interface Held {
  readonly kind: TableCacheKind;
  bytes: number;
  readonly drop: () => void;
}

const option = "tableCacheBytes (Python: table_cache_bytes)";

/**
 * @example
 * const cache = new TableCache();
 * cache.limit(32 << 20, 4);
 * cache.admit("p7", "page", bytes.length, () => kept.delete(7));
 */
export class TableCache {
  private cap = Infinity;
  private window = 1;
  /** Held items by id, least recently used first (a use moves an item to the end). */
  private readonly held = new Map<string, Held>();
  private readonly used = { page: 0, directory: 0 };
  private readonly peak = { total: 0, page: 0, directory: 0 };
  private readonly largest = { page: 0, directory: 0 };
  private readonly count = { page: 0, directory: 0 };
  private readonly evicted = { page: 0, directory: 0 };
  private readonly rereads = { page: 0, directory: 0 };

  /** Bytes held now, both kinds. */
  get bytes(): number {
    return this.used.page + this.used.directory;
  }

  /** The least cap that holds a window of pages of the largest size read so far and the largest directory page. */
  get least(): number {
    return this.window * this.largest.page + this.largest.directory;
  }

  /**
   * Caps the bytes held at `bytes`, for an order that reads `window` pages at once; drops the
   * least recently used items over it now, and the peaks start again from what stays.
   */
  limit(bytes: number, window: number): void {
    this.cap = bytes;
    this.window = window;
    this.fits();
    this.evictTo(0);
    // The peaks count from here: what was held before the cap is no measure of it.
    this.peak.page = this.used.page;
    this.peak.directory = this.used.directory;
    this.peak.total = this.bytes;
  }

  /** Whether `id` is held; a hit makes it the most recently used. */
  has(id: string): boolean {
    const h = this.held.get(id);
    if (h === undefined) return false;
    this.held.delete(id);
    this.held.set(id, h);
    return true;
  }

  /**
   * Holds `id` (`bytes` of `kind`), first dropping the least recently used others (their `drop`
   * called) until it fits under the cap. Throws TableCacheError where the cap cannot hold a
   * window of pages of the largest size read and a directory page. `again`: the owner read it
   * again after the cap dropped it (counted as thrash).
   */
  admit(id: string, kind: TableCacheKind, bytes: number, drop: () => void, again = false): void {
    this.forget(id);
    if (again) this.rereads[kind]++;
    this.largest[kind] = Math.max(this.largest[kind], bytes);
    this.fits();
    this.evictTo(bytes);
    this.held.set(id, { kind, bytes, drop });
    this.count[kind]++;
    this.charge(kind, bytes);
  }

  /** `id` grew by `bytes` (a page's pins fetched); others make room as for an admission. Nothing where it is not held. */
  grow(id: string, bytes: number): void {
    const h = this.held.get(id);
    if (h === undefined) return;
    this.held.delete(id);
    this.largest[h.kind] = Math.max(this.largest[h.kind], h.bytes + bytes);
    this.fits();
    this.evictTo(bytes);
    this.held.set(id, h);
    h.bytes += bytes;
    this.charge(h.kind, bytes);
  }

  /** Stops holding `id` without calling its `drop` (its owner let it go). */
  forget(id: string): void {
    const h = this.held.get(id);
    if (h === undefined) return;
    this.held.delete(id);
    this.used[h.kind] -= h.bytes;
    this.count[h.kind]--;
  }

  stats(): TableCacheStats {
    return {
      cap: this.cap,
      bytes: this.bytes,
      page_bytes: this.used.page,
      directory_bytes: this.used.directory,
      peak_bytes: this.peak.total,
      peak_page_bytes: this.peak.page,
      peak_directory_bytes: this.peak.directory,
      pages: this.count.page,
      directory_pages: this.count.directory,
      evicted_pages: this.evicted.page,
      evicted_directory_pages: this.evicted.directory,
      reread_pages: this.rereads.page,
      reread_directory_pages: this.rereads.directory,
    };
  }

  private charge(kind: TableCacheKind, bytes: number): void {
    this.used[kind] += bytes;
    this.peak[kind] = Math.max(this.peak[kind], this.used[kind]);
    this.peak.total = Math.max(this.peak.total, this.bytes);
  }

  /** Drops the least recently used items until `room` more bytes fit under the cap. */
  private evictTo(room: number): void {
    for (const [id, h] of this.held) {
      if (this.bytes + room <= this.cap) return;
      this.forget(id);
      this.evicted[h.kind]++;
      h.drop();
    }
  }

  /** Refuses a cap under one window of pages of the largest size read and the largest directory page. */
  private fits(): void {
    const need = this.least;
    if (need <= this.cap) return;
    throw new TableCacheError(
      `Expected ${option} of at least ${need} bytes (a window of ${this.window} table pages of up to ${this.largest.page} bytes and a directory page of ${this.largest.directory}) but received ${this.cap}: raise ${option}`,
    );
  }
}
