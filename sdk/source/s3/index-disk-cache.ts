/**
 * Indexes built on the client, kept on local disk keyed by (bucket, key, ETag) so a second
 * run over the same bucket reads no container headers at all. A changed object has a new ETag
 * and so misses. The same directory holds each bucket prefix's local table (local-table.ts: a
 * head and its pages);
 * it is bounded as a whole, least recently used files go first.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { decodeIndex, encodeIndex } from "../../../common/media-index/index.js";
import type { IndexV1 } from "../../../common/schema/index.js";

const SUFFIX = ".idx";
/** Files the cache owns and counts toward its bound: indexes, local table heads and their pages. */
const OWNED = [SUFFIX, ".tbl", ".tbp"];

/** $EC_INDEX_CACHE_DIR, else $XDG_CACHE_HOME/ec/index, else ~/.cache/ec/index. */
export function defaultIndexCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EC_INDEX_CACHE_DIR) return env.EC_INDEX_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "ec", "index");
}

interface Entry {
  size: number;
  used: number;
}

export class IndexDiskCache {
  private entries: Map<string, Entry> | undefined;
  private total = 0;
  /** Hits and misses since construction, for stats and tests. */
  hits = 0;
  misses = 0;

  /**
   * @example
   * const cache = new IndexDiskCache(defaultIndexCacheDir(), 64 << 20);
   * const index = (await cache.get(id)) ?? (await cache.put(id, await buildIndex(reader, meta)));
   */
  constructor(
    readonly dir: string,
    readonly maxBytes = 256 << 20,
  ) {}

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
    this.total = [...entries.values()].reduce((n, e) => n + e.size, 0);
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

  /** Stores `bytes` as `name` (atomically: temp file then rename) and evicts down to the bound. */
  async putFile(name: string, bytes: Uint8Array): Promise<void> {
    const entries = await this.tryLoad();
    if (!entries || bytes.length > this.maxBytes) return;
    const tmp = join(this.dir, `${name}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      await writeFile(tmp, bytes);
      await rename(tmp, this.path(name));
    } catch {
      // A full or read-only disk costs a rebuild next time, never the stream.
      await rm(tmp, { force: true }).catch(() => {});
      return;
    }
    const old = entries.get(name);
    this.total += bytes.length - (old?.size ?? 0);
    entries.set(name, { size: bytes.length, used: Date.now() });
    await this.evict(name);
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

  /** Bytes the cache holds now. */
  async bytes(): Promise<number> {
    return (await this.tryLoad()) ? this.total : 0;
  }

  private async evict(keep: string): Promise<void> {
    if (this.total <= this.maxBytes) return;
    const oldest = [...this.entries!.entries()].filter(([id]) => id !== keep).sort((a, b) => a[1].used - b[1].used);
    for (const [id] of oldest) {
      if (this.total <= this.maxBytes) break;
      await this.drop(id);
    }
  }

  private async drop(id: string): Promise<void> {
    const entry = this.entries?.get(id);
    if (!entry) return;
    this.entries!.delete(id);
    this.total -= entry.size;
    await rm(this.path(id), { force: true });
  }
}
