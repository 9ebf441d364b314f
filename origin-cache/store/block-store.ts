/**
 * The bounded on-disk block store. Every byte in the directory is accounted for before it is
 * written (reserved, then resident), and bytes being unlinked stay counted until the unlink
 * finishes, so the directory never holds more than `maxBytes`, even for an instant. When a block
 * cannot fit, `put` declines and the caller streams the bytes through uncached.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readdir, rm, stat, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { blockKey, type BlockId } from "./block-id.js";
import { blockFileSize, readBlockHeader, readBlockRange, writeBlockFile, type BlockHeader } from "./block-file.js";

export interface BlockStoreOptions {
  readonly dir: string;
  readonly maxBytes: number;
  readonly chunkSize: number;
  /** True while the plan needs the block soon; such blocks are evicted last. */
  readonly protect?: (key: string, index: number) => boolean;
  readonly onEvict?: (bytes: number) => void;
  readonly onCorrupt?: (path: string) => void;
}

interface Entry {
  readonly id: BlockId;
  readonly path: string;
  readonly fileSize: number;
  readonly header: BlockHeader;
}

/** Open block files kept for reuse: a warm read is then one pread, not open + pread + close. */
const OPEN_HANDLES = 256;

interface Handle {
  readonly fh: Promise<FileHandle>;
  refs: number;
  dropped: boolean;
}

export type { BlockId };

export class BlockStore {
  readonly #opts: BlockStoreOptions;
  readonly #blocksDir: string;
  readonly #tmpDir: string;
  // Map order is recency order: a hit re-inserts its entry at the end.
  readonly #entries = new Map<string, Entry>();
  #resident = 0;
  #reserved = 0;
  #unlinking = 0;
  #evictions = 0;
  readonly #handles = new Map<string, Handle>();

  private constructor(opts: BlockStoreOptions) {
    this.#opts = opts;
    this.#blocksDir = join(opts.dir, "blocks");
    this.#tmpDir = join(opts.dir, "tmp");
  }

  /** Opens the store, dropping leftovers of killed writes and re-indexing every intact block. */
  static async open(opts: BlockStoreOptions): Promise<BlockStore> {
    const store = new BlockStore(opts);
    await rm(store.#tmpDir, { recursive: true, force: true });
    await mkdir(store.#tmpDir, { recursive: true });
    await mkdir(store.#blocksDir, { recursive: true });
    await store.#rebuild();
    return store;
  }

  async #rebuild(): Promise<void> {
    const found: { entry: Entry; mtime: number }[] = [];
    for (const sub of await readdir(this.#blocksDir)) {
      const subDir = join(this.#blocksDir, sub);
      for (const name of await readdir(subDir).catch(() => [] as string[])) {
        const path = join(subDir, name);
        const read = await readBlockHeader(path);
        const id = read && { key: read.header.key, etag: read.header.etag, index: read.header.index };
        if (!read || !id || this.#pathOf(id) !== path) {
          this.#opts.onCorrupt?.(path);
          await unlink(path).catch(() => {});
          continue;
        }
        const { mtimeMs } = await stat(path);
        found.push({ entry: { id, path, fileSize: read.fileSize, header: read.header }, mtime: mtimeMs });
      }
    }
    found.sort((a, b) => a.mtime - b.mtime);
    for (const { entry } of found) {
      this.#entries.set(blockKey(entry.id), entry);
      this.#resident += entry.fileSize;
    }
    // A restart with a smaller limit trims the oldest blocks first.
    if (this.#resident > this.#opts.maxBytes) await this.#evict(this.#resident - this.#opts.maxBytes);
  }

  #pathOf(id: BlockId): string {
    const h = createHash("sha256").update(id.key).update("\0").update(id.etag).digest("hex").slice(0, 40);
    return join(this.#blocksDir, h.slice(0, 2), `${h}.${id.index}.blk`);
  }

  has(id: BlockId): boolean {
    return this.#entries.has(blockKey(id));
  }

  /**
   * Reads `[start, start + length)` of a block's data, verified. Undefined on a miss; a block that
   * fails its checksum is dropped and reads as a miss, so it is fetched again.
   */
  async read(id: BlockId, start: number, length: number): Promise<Buffer | undefined> {
    const k = blockKey(id);
    const entry = this.#entries.get(k);
    if (!entry) return undefined;
    this.#entries.delete(k);
    this.#entries.set(k, entry);
    const bytes = await this.#withHandle(entry.path, (fh) => readBlockRange(fh, entry.header, start, length));
    if (!bytes && this.#entries.get(k) === entry) {
      this.#opts.onCorrupt?.(entry.path);
      this.#entries.delete(k);
      await this.#remove(entry);
    }
    return bytes;
  }

  /** Stores a block if it fits after eviction; false means the caller serves it uncached. */
  async put(id: BlockId, data: Uint8Array): Promise<boolean> {
    if (this.has(id)) return true;
    const size = blockFileSize(id.key, id.etag, data.length, this.#opts.chunkSize);
    if (!(await this.#reserve(size))) return false;
    const path = this.#pathOf(id);
    const tmp = join(this.#tmpDir, `${randomBytes(8).toString("hex")}.tmp`);
    let header: BlockHeader;
    try {
      await mkdir(join(path, ".."), { recursive: true });
      header = await writeBlockFile(tmp, path, { ...id, data, chunkSize: this.#opts.chunkSize });
    } catch (err) {
      // Disk full or similar: the writer removed its temp file; the caller serves the bytes
      // uncached and logs why (a silent decline would hide a full disk).
      this.#reserved -= size;
      throw err;
    }
    this.#reserved -= size;
    this.#resident += size;
    this.#entries.set(blockKey(id), { id, path, fileSize: size, header });
    return true;
  }

  // Reservations that must evict run one at a time; concurrent ones would each see the others'
  // victims still on disk and evict again, emptying the cache.
  #evicting: Promise<unknown> = Promise.resolve();

  async #reserve(size: number): Promise<boolean> {
    const max = this.#opts.maxBytes;
    if (this.#resident + this.#reserved + this.#unlinking + size <= max) {
      this.#reserved += size;
      return true;
    }
    const turn = this.#evicting.then(async () => {
      for (;;) {
        const used = this.#resident + this.#reserved + this.#unlinking;
        if (used + size <= max) {
          this.#reserved += size;
          return true;
        }
        // Bytes held by writers in progress cannot be freed by evicting more: serve uncached.
        if (this.#reserved + size > max || this.#entries.size === 0) return false;
        await this.#evict(used + size - max);
      }
    });
    this.#evicting = turn.catch(() => {});
    return turn;
  }

  /** Frees at least `bytes`, least recently used first, blocks the plan needs soon last. */
  async #evict(bytes: number): Promise<void> {
    const victims: Entry[] = [];
    let freed = 0;
    const pick = (allowProtected: boolean): void => {
      for (const [k, e] of this.#entries) {
        if (freed >= bytes) return;
        if (!allowProtected && this.#opts.protect?.(e.id.key, e.id.index)) continue;
        this.#entries.delete(k);
        victims.push(e);
        freed += e.fileSize;
      }
    };
    pick(false);
    if (freed < bytes) pick(true);
    await Promise.all(victims.map((e) => this.#remove(e)));
    this.#evictions += victims.length;
    this.#opts.onEvict?.(freed);
  }

  async #withHandle<T>(path: string, fn: (fh: FileHandle) => Promise<T | undefined>): Promise<T | undefined> {
    let h = this.#handles.get(path);
    if (h) this.#handles.delete(path);
    else {
      h = { fh: open(path, "r"), refs: 0, dropped: false };
      h.fh.catch(() => {});
      while (this.#handles.size >= OPEN_HANDLES) this.#dropHandle(this.#handles.keys().next().value as string);
    }
    this.#handles.set(path, h);
    h.refs++;
    try {
      return await fn(await h.fh);
    } catch {
      // Gone (evicted meanwhile) or unreadable: a miss either way.
      this.#dropHandle(path);
      return undefined;
    } finally {
      h.refs--;
      if (h.dropped && h.refs === 0) void h.fh.then((fh) => fh.close()).catch(() => {});
    }
  }

  #dropHandle(path: string): void {
    const h = this.#handles.get(path);
    if (!h) return;
    this.#handles.delete(path);
    h.dropped = true;
    if (h.refs === 0) void h.fh.then((fh) => fh.close()).catch(() => {});
  }

  /** Closes every kept file handle. */
  async close(): Promise<void> {
    for (const path of [...this.#handles.keys()]) this.#dropHandle(path);
  }

  async #remove(e: Entry): Promise<void> {
    this.#dropHandle(e.path);
    this.#resident -= e.fileSize;
    this.#unlinking += e.fileSize;
    try {
      await unlink(e.path);
    } catch {
      // Already gone: nothing in the directory to account for.
    } finally {
      this.#unlinking -= e.fileSize;
    }
  }

  get residentBytes(): number {
    return this.#resident;
  }
  get blocks(): number {
    return this.#entries.size;
  }
  get evictions(): number {
    return this.#evictions;
  }
  get maxBytes(): number {
    return this.#opts.maxBytes;
  }
}
