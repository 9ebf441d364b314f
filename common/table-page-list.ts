/**
 * A generation's page list read lazily: the verified head, and page refs read from its
 * directory pages (head format 2) only as a range of them is asked for, each directory page
 * checked against the SHA-256 its signed head names. Those read are held in `cache` (charged
 * their bytes, with the table pages of a LazyTable sharing it) and, dropped from it under its
 * cap, read and checked again when next asked for. A format-1 head lists its pages itself, and
 * nothing is read.
 */
import { compareKeys } from "./dataset-table/entry.js";
import { sha256 } from "./dataset-table/digest.js";
import { decodeDirectory, directoryStarts, runOf } from "./dataset-table/directory.js";
import { MAX_PAGES_PER_REQUEST } from "./dataset-table/page-frames.js";
import { ManifestError, ManifestErrorCode } from "./manifest-sign.js";
import { TableCache } from "./table-cache.js";
import type { TableDirectoryRefV1, TableHeadV1, TablePageRefV1 } from "./schema/index.js";

/** What the page list reads directory pages with (a TableStore of table-client.ts is one). */
export interface DirectoryStore {
  page(name: string): Promise<Uint8Array>;
  pages?(names: readonly string[]): Promise<Uint8Array[] | undefined>;
}

/** A page's base64url SHA-256, as the head records it. */
export type Digest = (bytes: Uint8Array) => string | Promise<string>;

/**
 * The page list of one verified generation. Page indices are positions in the generation's
 * key order (0 to `pageCount` − 1), entry indices likewise over every entry of every page.
 *
 * @example
 * const list = new TablePageList(head, store);
 * const first = await list.pagesAt(0, 64); // reads the directory pages of pages 0..63 only
 */
export class TablePageList {
  /** Where each directory page starts in the page list and the entry list (head format 2). */
  private readonly starts: { pageStart: number[]; entryStart: number[] } | undefined;
  private readonly read = new Map<number, Promise<TablePageRefV1[]>>();
  /** 1 for each directory page the cache dropped (a read of it again is counted as such). */
  private readonly dropped: Uint8Array;
  /** Requests made for directory pages so far. */
  requests = 0;
  /** Directory pages read so far (each read again after the cache dropped it included). */
  directoryReads = 0;

  constructor(
    readonly head: TableHeadV1,
    private readonly store: DirectoryStore,
    private readonly digest: Digest = sha256,
    /** Where the directory pages read are held (unbounded unless limited). */
    readonly cache: TableCache = new TableCache(),
  ) {
    this.starts = head.version === 2 ? directoryStarts(head) : undefined;
    this.dropped = new Uint8Array(head.version === 2 ? head.directories.length : 0);
  }

  /** Pages in the generation. */
  get pageCount(): number {
    return this.head.version === 1 ? this.head.pages.length : this.starts!.pageStart.at(-1)!;
  }

  /** Entries (objects) in the generation. */
  get entryCount(): number {
    return this.head.version === 1 ? this.head.pages.reduce((n, p) => n + p.count, 0) : this.starts!.entryStart.at(-1)!;
  }

  /**
   * The page refs [from, to) in key order: name, key range, count, bytes, SHA-256, summaries
   * (digest, frames, keyframes, errors, shards) and pins. Reads only the directory pages that
   * hold them (several in one request where the store can), each once per list.
   *
   * @example
   * const refs = await list.pagesAt(100, 164);
   */
  async pagesAt(from: number, to: number): Promise<TablePageRefV1[]> {
    const n = this.pageCount;
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || to > n)
      throw new RangeError(`Expected a page range within [0, ${n}] but received [${from}, ${to})`);
    if (this.head.version === 1) return this.head.pages.slice(from, to);
    if (from === to) return [];
    const { pageStart } = this.starts!;
    const first = runOf(pageStart, from);
    const last = runOf(pageStart, to - 1);
    const dirs = await this.directories(first, last + 1);
    const out: TablePageRefV1[] = [];
    for (let d = first; d <= last; d++) {
      const pages = dirs[d - first]!;
      const lo = Math.max(from, pageStart[d]!) - pageStart[d]!;
      const hi = Math.min(to, pageStart[d + 1]!) - pageStart[d]!;
      for (let i = lo; i < hi; i++) out.push(pages[i]!);
    }
    return out;
  }

  /**
   * The page holding entry `entry` (an index over the whole generation) and the entry's index
   * within it; reads at most the one directory page that holds it.
   *
   * @example
   * await list.pageOfEntry(1_234_567); // { page: 1234, offset: 567 }
   */
  async pageOfEntry(entry: number): Promise<{ page: number; offset: number }> {
    const total = this.entryCount;
    if (!Number.isInteger(entry) || entry < 0 || entry >= total)
      throw new RangeError(`Expected an entry index within [0, ${total}) but received ${entry}`);
    let pages: readonly TablePageRefV1[];
    let page = 0;
    let at = 0;
    if (this.head.version === 1) pages = this.head.pages;
    else {
      const d = runOf(this.starts!.entryStart, entry);
      pages = (await this.directories(d, d + 1))[0]!;
      page = this.starts!.pageStart[d]!;
      at = this.starts!.entryStart[d]!;
    }
    for (const p of pages) {
      if (entry < at + p.count) return { page, offset: entry - at };
      at += p.count;
      page++;
    }
    throw new ManifestError(ManifestErrorCode.INVALID, "The table's directory pages do not add up to its head");
  }

  /**
   * The page range [from, to) whose key ranges can hold a key under `dir` ("prefix/"): every
   * page for the root's dataset, and otherwise read from at most the two directory pages at
   * the prefix's edges.
   *
   * @example
   * await list.rangeUnder("gameplay/day1/"); // { from: 40, to: 77 }
   */
  async rangeUnder(dir: string): Promise<{ from: number; to: number }> {
    const overlaps = (r: { first: string; last: string }) =>
      compareKeys(r.last, dir) >= 0 && (compareKeys(r.first, dir) <= 0 || r.first.startsWith(dir));
    if (this.head.version === 1) {
      const hits = this.head.pages.map((p, i) => (overlaps(p) ? i : -1)).filter((i) => i >= 0);
      return hits.length === 0 ? { from: 0, to: 0 } : { from: hits[0]!, to: hits.at(-1)! + 1 };
    }
    const dirs = this.head.directories;
    const { pageStart } = this.starts!;
    const hit = dirs.map((d, i) => (overlaps(d) ? i : -1)).filter((i) => i >= 0);
    if (hit.length === 0) return { from: 0, to: 0 };
    const [a, b] = [hit[0]!, hit.at(-1)!];
    const inside = (d: TableDirectoryRefV1) => d.first.startsWith(dir) && d.last.startsWith(dir);
    let from = pageStart[a]!;
    let to = pageStart[b + 1]!;
    if (!inside(dirs[a]!)) {
      const pages = (await this.directories(a, a + 1))[0]!;
      from += Math.max(
        0,
        pages.findIndex((p) => overlaps(p)),
      );
    }
    if (!inside(dirs[b]!)) {
      const pages = (await this.directories(b, b + 1))[0]!;
      let k = pages.length;
      while (k > 0 && !overlaps(pages[k - 1]!)) k--;
      to = pageStart[b]! + k;
    }
    return to > from ? { from, to } : { from: 0, to: 0 };
  }

  /**
   * Directory pages [first, last) of a format-2 head, read (and checked) where the cache does
   * not hold them, up to MAX_PAGES_PER_REQUEST a request.
   */
  private async directories(first: number, last: number): Promise<TablePageRefV1[][]> {
    const dirs = (this.head as Extract<TableHeadV1, { version: 2 }>).directories;
    const missing: number[] = [];
    // One being read is not held yet: it is waited for, not read twice.
    for (let d = first; d < last; d++) if (!this.cache.has(`d${d}`) && !this.read.has(d)) missing.push(d);
    for (let i = 0; i < missing.length; i += MAX_PAGES_PER_REQUEST) {
      const batch = missing.slice(i, i + MAX_PAGES_PER_REQUEST);
      const fetched = this.fetch(batch.map((d) => dirs[d]!.name));
      batch.forEach((d, k) => {
        const one: Promise<TablePageRefV1[]> = fetched.then(async (all) => {
          const bytes = all[k]!;
          const pages = await this.check(dirs[d]!, bytes);
          this.directoryReads++;
          const again = this.dropped[d] === 1;
          this.dropped[d] = 0;
          const drop = () => {
            if (this.read.get(d) === one) this.read.delete(d);
            this.dropped[d] = 1;
          };
          this.cache.admit(`d${d}`, "directory", bytes.byteLength, drop, again);
          return pages;
        });
        // A failed read is not kept: the next ask reads it again.
        one.catch(() => {
          if (this.read.get(d) === one) this.read.delete(d);
        });
        this.read.set(d, one);
      });
    }
    return Promise.all(Array.from({ length: last - first }, (_, k) => this.read.get(first + k)!));
  }

  private async fetch(names: readonly string[]): Promise<Uint8Array[]> {
    if (names.length > 1 && this.store.pages) {
      this.requests++;
      const many = await this.store.pages(names);
      if (many !== undefined) return many;
    }
    this.requests += names.length;
    return Promise.all(names.map((name) => this.store.page(name)));
  }

  private async check(ref: TableDirectoryRefV1, bytes: Uint8Array): Promise<TablePageRefV1[]> {
    if ((await this.digest(bytes)) !== ref.sha256)
      throw new ManifestError(
        ManifestErrorCode.SIGNATURE,
        `Table directory page ${ref.name} does not match the digest its signed head names`,
      );
    const pages = decodeDirectory(bytes);
    if (pages.length !== ref.pages || pages.reduce((n, p) => n + p.count, 0) !== ref.count)
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `Table directory page ${ref.name} lists other pages than its signed head counts`,
      );
    return pages;
  }
}
