/**
 * Indexes built on the client, kept on local disk keyed by (bucket, key, ETag) so a second
 * run over the same bucket reads no container headers at all. A changed object has a new ETag
 * and so misses. The same directory holds each bucket prefix's local table (local-table.ts: a
 * head and its pages). Indexes and tables have a bound each, least recently used files going
 * first within it: an epoch that reads more indexes than the bound holds (read lazily, ahead of
 * each object's first clip) must not evict the table that lets the next open skip them all.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { decodeIndex, encodeIndex } from "../../../common/media-index/index.js";
import type { IndexV1 } from "../../../common/schema/index.js";
import type { S3Env } from "./s3-env.js";

const SUFFIX = ".idx";
/** Files the cache owns and counts toward its bounds: indexes, local table heads and their pages. */
const OWNED = [SUFFIX, ".tbl", ".tbp"];

/** What a file counts toward: the bound of indexes, or that of local tables. */
export type CacheClass = "index" | "table";
const classOf = (name: string): CacheClass => (name.endsWith(SUFFIX) ? "index" : "table");

/** Default bound of the local tables: about 5 × 10^7 small objects at ≈ 20 B each (bench/README.md). */
export const DEFAULT_TABLE_BYTES = 1 << 30;

/** $EC_INDEX_CACHE_DIR, else $XDG_CACHE_HOME/ec/index, else ~/.cache/ec/index. */
export function defaultIndexCacheDir(env: S3Env = {}): string {
  if (env.EC_INDEX_CACHE_DIR) return env.EC_INDEX_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "ec", "index");
}

interface Entry {
  size: number;
  used: number;
}

export class IndexDiskCache {
  private entries: Map<string, Entry> | undefined;
  private readonly totals: Record<CacheClass, number> = { index: 0, table: 0 };
  /** Hits and misses since construction, for stats and tests. */
  hits = 0;
  misses = 0;

  /**
   * @example
   * const cache = new IndexDiskCache(defaultIndexCacheDir(pickS3Env(process.env)), 64 << 20);
   * const index = (await cache.get(id)) ?? (await cache.put(id, await buildIndex(reader, meta)));
   */
  constructor(
    readonly dir: string,
    /** Bound of the indexes (`.idx`). */
    readonly maxBytes = 256 << 20,
    /** Bound of the local tables (`.tbl`, `.tbp`), apart from the indexes'. */
    readonly tableBytes = DEFAULT_TABLE_BYTES,
  ) {}

  private bound(c: CacheClass): number {
    return c === "index" ? this.maxBytes : this.tableBytes;
  }

  /** The cache file name for one object version; the scope (endpoint and bucket) keeps buckets apart. */
  static id(scope: string, key: string, etag: string): string {
    return createHash("sha256").update(`${scope}\n${key}\n${etag}`).digest("hex");
  }

  private loading: Promise<Map<string, Entry>> | undefined;

  /** Scans the directory once per process (concurrent callers share the scan). */
  private load(): Promise<Map<string, Entry>> {
    this.loading ??= this.scan().catch((err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  private async scan(): Promise<Map<string, Entry>> {
    await mkdir(this.dir, { recursive: true });
    const entries = new Map<string, Entry>();
    for (const name of await readdir(this.dir)) {
      const st = await stat(join(this.dir, name)).catch(() => undefined);
      if (!st) continue;
      if (OWNED.some((suffix) => name.endsWith(suffix))) entries.set(name, { size: st.size, used: st.mtimeMs });
      // A temp file a minute old was left by a killed writer; a younger one may be another rank's, mid-write.
      else if (name.endsWith(".tmp") && Date.now() - st.mtimeMs > 60_000)
        await rm(join(this.dir, name), { force: true });
    }
    this.entries = entries;
    for (const [name, e] of entries) this.totals[classOf(name)] += e.size;
    return entries;
  }

  private path(name: string): string {
    return join(this.dir, name);
  }

  /** The directory's entries, or none where it cannot be made or read: the cache then only misses. */
  private async tryLoad(): Promise<Map<string, Entry> | undefined> {
    try {
      return await this.load();
    } catch {
      return undefined;
    }
  }

  /** The cached index, or undefined on a miss or an unreadable entry (which is dropped). */
  async get(id: string, expect: { key: string; etag: string }): Promise<IndexV1 | undefined> {
    const index = await this.getFile(id + SUFFIX, (bytes) => {
      const index = decodeIndex(bytes);
      return index.key === expect.key && index.etag === expect.etag ? index : undefined;
    });
    if (index) this.hits++;
    else this.misses++;
    return index;
  }

  /** Stores the index (atomically: temp file then rename) and evicts down to the bound. */
  async put(id: string, index: IndexV1): Promise<IndexV1> {
    await this.putFile(id + SUFFIX, encodeIndex(index));
    return index;
  }

  /**
   * The file `name` decoded by `decode`, or undefined where it is missing or `decode` rejects
   * it (undefined or a throw: corrupt, foreign), in which case it is dropped.
   */
  async getFile<T>(
    name: string,
    decode: (bytes: Uint8Array) => T | undefined | Promise<T | undefined>,
  ): Promise<T | undefined> {
    const entries = await this.tryLoad();
    const entry = entries?.get(name);
    if (!entry) return undefined;
    try {
      const file = await readFile(this.path(name));
      // A plain Uint8Array view: decoded fields must not come back as Buffers.
      const value = await decode(new Uint8Array(file.buffer, file.byteOffset, file.byteLength));
      if (value !== undefined) {
        entry.used = Date.now();
        // mtime carries recency across runs.
        await utimes(this.path(name), new Date(), new Date(entry.used)).catch(() => {});
        return value;
      }
    } catch {
      // Corrupt or foreign: fall through to a rebuild.
    }
    await this.drop(name);
    return undefined;
  }

  /**
   * Stores `bytes` as `name` (atomically: temp file then rename) after evicting, least recently
   * used first, files of its class down to its bound, with room kept for `o.reserve` (a file of
   * that many bytes to be written later, replacing the one of that name); files whose name starts
   * with `o.keep` are never evicted. False, and nothing written, where that leaves no room (or
   * the disk refuses it).
   */
  async putFile(
    name: string,
    bytes: Uint8Array,
    o: { keep?: string; reserve?: { name: string; bytes: number } } = {},
  ): Promise<boolean> {
    const entries = await this.tryLoad();
    if (!entries) return false;
    const c = classOf(name);
    const size = (n: string) => entries.get(n)?.size ?? 0;
    const reserve = o.reserve ? Math.max(0, o.reserve.bytes - size(o.reserve.name)) : 0;
    const room = this.bound(c) - reserve - bytes.length + size(name);
    if (!(await this.evict(c, room, (id) => id === name || (o.keep !== undefined && id.startsWith(o.keep)))))
      return false;
    const tmp = join(this.dir, `${name}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      await writeFile(tmp, bytes);
      await rename(tmp, this.path(name));
    } catch {
      // A full or read-only disk costs a rebuild next time, never the stream.
      await rm(tmp, { force: true }).catch(() => {});
      return false;
    }
    const old = entries.get(name);
    this.totals[c] += bytes.length - (old?.size ?? 0);
    entries.set(name, { size: bytes.length, used: Date.now() });
    return true;
  }

  /** Names of the files this process knows of (the directory's at the first use, and since) that start with `prefix`. */
  async names(prefix: string): Promise<string[]> {
    const entries = await this.tryLoad();
    return entries ? [...entries.keys()].filter((name) => name.startsWith(prefix)) : [];
  }

  /** Removes the file `name`, if the cache holds it. */
  async dropFile(name: string): Promise<void> {
    if (await this.tryLoad()) await this.drop(name);
  }

  /** Bytes the cache holds now: of one class, or in all. */
  async bytes(c?: CacheClass): Promise<number> {
    if (!(await this.tryLoad())) return 0;
    return c === undefined ? this.totals.index + this.totals.table : this.totals[c];
  }

  /** Drops files of class `c` but those `kept`, least recently used first, until it holds at most `room` bytes; whether it does. */
  private async evict(c: CacheClass, room: number, kept: (id: string) => boolean): Promise<boolean> {
    if (room < 0) return false;
    if (this.totals[c] <= room) return true;
    const oldest = [...this.entries!.entries()]
      .filter(([id]) => classOf(id) === c && !kept(id))
      .sort((a, b) => a[1].used - b[1].used);
    // Only what must go: where the kept files alone pass `room`, nothing is dropped in vain.
    const keptBytes = this.totals[c] - oldest.reduce((n, [, e]) => n + e.size, 0);
    if (keptBytes > room) return false;
    for (const [id] of oldest) {
      if (this.totals[c] <= room) break;
      await this.drop(id);
    }
    return true;
  }

  private async drop(id: string): Promise<void> {
    const entry = this.entries?.get(id);
    if (!entry) return;
    this.entries!.delete(id);
    this.totals[classOf(id)] -= entry.size;
    await rm(this.path(id), { force: true });
  }
}
