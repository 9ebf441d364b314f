/**
 * A dataset that is a local directory (file:///path or an absolute path): the "local files"
 * baseline of the benchmarks, and tests without an edge. Indexes are built here with the same
 * code the edge runs.
 */
import { readdir, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { RESERVED_PREFIX } from "../../common/keys.js";
import {
  buildIndex,
  HOST_INDEX_MEMORY_BYTES,
  guessKind,
  IndexErrorCode,
  type RangeReader,
} from "../../common/media-index/index.js";
import type { IndexV1 } from "../../common/schema/index.js";
import { SdkError } from "../errors.js";
import { fileEtag, OpenFiles } from "./open-files.js";
import type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceStats } from "./source.js";

/** Objects per shard are grouped up to this many bytes, as the edge's manifest does. */
const SHARD_BYTES = 64 << 20;

/** Files kept open between reads by default: a prefetch window's worth of clips from distinct objects. */
export const DEFAULT_MAX_OPEN_FILES = 32;

export interface LocalDirOptions {
  /** At most this many files are held open between reads (least recently read closed first). */
  readonly maxOpenFiles?: number;
}

async function walk(dir: string, root = dir): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    // The reserved prefix holds ec's own files (label sidecars), as on the edge.
    if (dir === root && `${entry.name}/` === RESERVED_PREFIX) continue;
    if (entry.isDirectory()) out.push(...(await walk(path, root)));
    // A link is listed as what it points to when read; a dangling one becomes an unreadable object.
    else if (entry.isFile() || entry.isSymbolicLink()) out.push(path);
  }
  return out;
}

/** fs error codes that are facts about one file (reported per object), not about the dataset. */
const UNREADABLE = new Set(["EACCES", "EPERM", "ENOENT", "ELOOP", "EISDIR", "ENXIO", "EIO"]);

function unreadable(key: string, cause: unknown): NonNullable<IndexV1["error"]> | undefined {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !UNREADABLE.has(code)) return undefined;
  return { code: IndexErrorCode.UNREADABLE, message: `${key} cannot be read: ${(cause as Error).message}` };
}

/** Contiguous runs of objects (or of a table's sizes) of about `limit` bytes each. */
export function shardsBySize(
  objects: readonly { size: number }[] | Float64Array,
  limit = SHARD_BYTES,
): { objects: number[] }[] {
  const shards: { objects: number[] }[] = [];
  let current: number[] = [];
  let bytes = 0;
  for (let i = 0; i < objects.length; i++) {
    const size = objects instanceof Float64Array ? objects[i]! : objects[i]!.size;
    if (current.length > 0 && bytes + size > limit) {
      shards.push({ objects: current });
      current = [];
      bytes = 0;
    }
    current.push(i);
    bytes += size;
  }
  if (current.length > 0) shards.push({ objects: current });
  return shards;
}

export class LocalDirSource implements DatasetSource {
  private bytesFetched = 0;
  /** Objects whose listing already failed (a dangling link), by key. */
  private readonly unreadable = new Map<string, NonNullable<IndexV1["error"]>>();
  /** Reads are one pread on a handle kept open, not an open/read/close each. */
  private readonly files: OpenFiles;
  constructor(
    readonly root: string,
    options: LocalDirOptions = {},
  ) {
    this.files = new OpenFiles(options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES);
  }

  private path(object: DatasetObject): string {
    return join(this.root, ...object.key.split("/"));
  }

  async list(): Promise<DatasetListing & { readonly objects: readonly DatasetObject[] }> {
    let files: string[];
    try {
      files = await walk(this.root);
    } catch (cause) {
      throw new SdkError(
        "ERR_DATASET_NOT_FOUND",
        `Expected a readable directory at ${this.root} but could not list it`,
        { cause },
      );
    }
    const objects: DatasetObject[] = [];
    for (const file of files.sort()) {
      const key = relative(this.root, file).split(sep).join("/");
      let st;
      try {
        st = await stat(file);
      } catch (cause) {
        const error = unreadable(key, cause);
        if (!error) throw cause;
        this.unreadable.set(key, error);
        objects.push({ key, size: 0, etag: "unreadable", kind: guessKind(key) });
        continue;
      }
      if (!st.isFile()) continue; // a link to a directory: its files are not followed
      objects.push({
        key,
        size: st.size,
        etag: fileEtag(st),
        kind: guessKind(key),
      });
    }
    return { objects, shards: shardsBySize(objects) };
  }

  async index(object: DatasetObject): Promise<IndexV1> {
    const base = { version: 1 as const, key: object.key, etag: object.etag, size: object.size, kind: "error" as const };
    const listed = this.unreadable.get(object.key);
    if (listed) return { ...base, error: listed };
    // Header reads for the index are not media bytes: they stay out of bytes_fetched.
    const reader: RangeReader = { size: object.size, read: (offset, length) => this.readFile(object, offset, length) };
    try {
      return await buildIndex(reader, { key: object.key, etag: object.etag, memoryBytes: HOST_INDEX_MEMORY_BYTES });
    } catch (err) {
      const error = unreadable(object.key, (err as Error).cause);
      if (error) return { ...base, error };
      throw err;
    }
  }

  async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    const bytes = await this.readFile(object, offset, length);
    this.bytesFetched += bytes.length;
    return bytes;
  }

  /** A file no longer at the listed etag (edited or replaced since) is ERR_ETAG_CHANGED, never read stale. */
  private async readFile(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    // Not zero-filled first: every byte handed out is read from the file.
    const buf = Buffer.allocUnsafeSlow(length);
    const got = await this.files.read(this.path(object), object.etag, buf, offset);
    return got === length ? buf : buf.subarray(0, got);
  }

  plan(_ranges: readonly PlannedRange[]): void {
    // The page cache is the only cache here.
  }

  stats(): SourceStats {
    return { bytesFetched: this.bytesFetched, cacheHits: 0, cacheMisses: 0 };
  }

  async release(): Promise<void> {
    await this.files.close();
  }

  async close(): Promise<void> {
    await this.files.close();
  }
}

/** The source for file: URLs. */
export async function localDirSource(url: URL): Promise<DatasetSource> {
  return new LocalDirSource(fileURLToPath(url));
}
