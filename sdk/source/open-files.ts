/**
 * A bounded LRU of open file handles, one per path, each pinned to the version (etag) it was
 * opened at: a read of the same version is one pread, a read of another version reopens.
 */
import type { Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { describeReceived } from "../../common/errors.js";
import { InvalidOptionError, SdkError } from "../errors.js";

/** The etag a local file is listed with: its size and mtime, so an edit or a replacement changes it. */
export function fileEtag(st: Pick<Stats, "size" | "mtimeMs">): string {
  return `${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}`;
}

interface OpenFile {
  readonly etag: string;
  readonly handle: Promise<FileHandle>;
  /** Reads in flight: an evicted handle is closed when the last of them ends. */
  users: number;
  evicted: boolean;
  closed: boolean;
}

export class OpenFiles {
  private readonly files = new Map<string, OpenFile>();
  private readonly closing = new Set<Promise<void>>();

  constructor(readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new InvalidOptionError(
        `Expected a positive integer for maxOpenFiles but received ${describeReceived(max)}`,
      );
  }

  /** Handles held now (idle or in use), evicted ones still finishing a read excluded. */
  get size(): number {
    return this.files.size;
  }

  /**
   * Fills `buf` from `offset` of the file at `path` as it is at `etag`; returns the bytes read
   * (fewer only at the end of the file). A file that is no longer at `etag` is ERR_ETAG_CHANGED.
   */
  async read(path: string, etag: string, buf: Uint8Array, offset: number): Promise<number> {
    const file = this.acquire(path, etag);
    file.users++;
    try {
      const fh = await file.handle;
      let got = 0;
      while (got < buf.length) {
        const { bytesRead } = await fh.read(buf, got, buf.length - got, offset + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got;
    } catch (err) {
      this.drop(path, file);
      throw err;
    } finally {
      file.users--;
      if (file.evicted && file.users === 0) this.closeLater(file);
    }
  }

  /** Closes every handle; the pool stays usable (a later read opens again). */
  async close(): Promise<void> {
    for (const [path, file] of [...this.files]) this.drop(path, file);
    await Promise.all(this.closing);
  }

  private acquire(path: string, etag: string): OpenFile {
    const held = this.files.get(path);
    if (held && held.etag === etag) {
      // Most recently used last: the map's first entry is the one to evict.
      this.files.delete(path);
      this.files.set(path, held);
      return held;
    }
    if (held) this.drop(path, held);
    const file: OpenFile = { etag, handle: openAt(path, etag), users: 0, evicted: false, closed: false };
    file.handle.catch(() => this.drop(path, file));
    this.files.set(path, file);
    for (const [oldest, victim] of this.files) {
      if (this.files.size <= this.max) break;
      this.drop(oldest, victim);
    }
    return file;
  }

  private drop(path: string, file: OpenFile): void {
    if (this.files.get(path) === file) this.files.delete(path);
    if (file.evicted) return;
    file.evicted = true;
    if (file.users === 0) this.closeLater(file);
  }

  private closeLater(file: OpenFile): void {
    if (file.closed) return;
    file.closed = true;
    const done = file.handle.then(
      (fh) => fh.close(),
      () => {},
    );
    const tracked = done.catch(() => {}).finally(() => this.closing.delete(tracked));
    this.closing.add(tracked);
  }
}

async function openAt(path: string, etag: string): Promise<FileHandle> {
  const fh = await open(path, "r");
  let now: string;
  try {
    now = fileEtag(await fh.stat());
  } catch (err) {
    await fh.close();
    throw err;
  }
  if (now !== etag) {
    await fh.close();
    throw new SdkError("ERR_ETAG_CHANGED", `Expected ${path} at etag ${etag} but received a file at etag ${now}`);
  }
  return fh;
}
