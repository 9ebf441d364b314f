/**
 * The slab files of a store: slot `s` lives in slab `floor(s / slotsPerSlab)` at a fixed offset,
 * each slab is one long-lived file handle, and blocks are written and read at offsets in it. A
 * slab grows as its slots are first written (a write past the end extends it), so it never
 * holds more than its slots, and the slabs together never more than `slots × slotBytes`.
 * Not thread-safe in the sense that matters here: one store owns its directory.
 */
import { SLAB_NAME } from "./own-dir.js";
import { constants, read as readFd, readv as readvFd } from "node:fs";
import { open, readdir, unlink, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";

export interface SlabGeometry {
  readonly dir: string;
  readonly slotBytes: number;
  readonly slotsPerSlab: number;
  /** Slots in all, over every slab. */
  readonly slots: number;
  /** Mode of the slab files (0600: the cache's user alone); existing ones are set to it on open. */
  readonly fileMode?: number;
}

export interface SlabFile {
  readonly slab: number;
  readonly path: string;
  readonly fh: FileHandle;
}

const NAME = SLAB_NAME;

function closedError(): Error {
  return Object.assign(new Error("EBADF: slab files closed"), { code: "EBADF" });
}

function noSpace(wrote: number, expected: number): Error {
  return Object.assign(new Error(`ENOSPC: wrote ${wrote} of ${expected} bytes of a block (disk full)`), {
    code: "ENOSPC",
  });
}

export class SlabFiles {
  readonly #g: SlabGeometry;
  readonly #open = new Map<number, Promise<SlabFile>>();
  // The same handles once open, so a warm read does not wait a turn for a settled promise.
  readonly #ready = new Map<number, SlabFile>();
  // Reads on a raw descriptor (see readv) still running: close waits for them before it closes one.
  #reading = 0;
  #idle: (() => void) | undefined;
  #closed = false;
  readonly #absolute: string[] = [];

  constructor(geometry: SlabGeometry) {
    this.#g = geometry;
  }

  get slotsPerSlab(): number {
    return this.#g.slotsPerSlab;
  }

  get slabs(): number {
    return Math.ceil(this.#g.slots / this.#g.slotsPerSlab);
  }

  pathOf(slab: number): string {
    return join(this.#g.dir, `${this.#g.slotBytes}-${slab}.slab`);
  }

  /** `pathOf` made absolute, built once per slab: every located block names its slab's path. */
  absolutePathOf(slab: number): string {
    return (this.#absolute[slab] ??= resolve(this.pathOf(slab)));
  }

  slabOf(slot: number): number {
    return Math.floor(slot / this.#g.slotsPerSlab);
  }

  /** The slot's byte offset in its slab. */
  offsetOf(slot: number): number {
    return (slot % this.#g.slotsPerSlab) * this.#g.slotBytes;
  }

  /** Where a slot is, for logs and for readers outside the store. */
  describe(slot: number): string {
    return `${this.pathOf(this.slabOf(slot))}@${this.offsetOf(slot)}`;
  }

  /**
   * Removes every slab of the directory that is not one of this geometry (another slot size, or
   * a slab past the last one) and returns the slabs that are. A file not named as a slab is not
   * the cache's, and is left alone.
   */
  async existing(): Promise<number[]> {
    const keep: number[] = [];
    for (const name of await readdir(this.#g.dir)) {
      const m = NAME.exec(name);
      if (
        m &&
        Number(m[1]) === this.#g.slotBytes &&
        Number(m[2]) < this.slabs &&
        name === `${m[1]}-${Number(m[2])}.slab`
      )
        keep.push(Number(m[2]));
      else if (m) await unlink(join(this.#g.dir, name)).catch(() => {});
    }
    return keep.sort((a, b) => a - b);
  }

  /** The slab's handle, opened (and created) on first use and kept until close; EBADF after close. */
  file(slab: number): Promise<SlabFile> {
    let f = this.#open.get(slab);
    if (!f) {
      // Opened after close, a handle would stay open for good: nothing closes it.
      if (this.#closed) return Promise.reject(closedError());
      const path = this.pathOf(slab);
      const mode = this.#g.fileMode ?? 0o600;
      f = open(path, constants.O_RDWR | constants.O_CREAT, mode).then(async (fh) => {
        // A slab made before, under another mode (or umask), is narrowed to this one.
        await fh.chmod(mode).catch(async (err: unknown) => {
          await fh.close();
          throw err;
        });
        // A new slab's name must outlive a power cut as much as its first blocks do.
        await syncDir(this.#g.dir);
        const file = { slab, path, fh };
        // Opened while close ran: close closes it, and no read may take it.
        if (!this.#closed) this.#ready.set(slab, file);
        return file;
      });
      this.#open.set(slab, f);
      f.catch(() => this.#open.get(slab) === f && this.#open.delete(slab));
    }
    return f;
  }

  /** Writes a slot (header and data) in one call at its offset; a short write is ENOSPC. */
  async write(slot: number, parts: readonly Buffer[]): Promise<void> {
    const { fh } = await this.file(this.slabOf(slot));
    const expected = parts.reduce((n, p) => n + p.length, 0);
    // A nearly full disk takes part of a write and reports no error: the slot would be torn.
    const { bytesWritten } = await fh.writev(parts as Buffer[], this.offsetOf(slot));
    if (bytesWritten !== expected) throw noSpace(bytesWritten, expected);
  }

  /** Reads `length` bytes at `at` inside the slot; false when the slab ends first. */
  async read(slot: number, into: Buffer, at: number, length: number): Promise<boolean> {
    const slab = this.slabOf(slot);
    const { fh } = this.#ready.get(slab) ?? (await this.file(slab));
    const base = this.offsetOf(slot) + at;
    let got = 0;
    while (got < length) {
      const { bytesRead } = await fh.read(into, got, length - got, base + got);
      if (bytesRead === 0) return false;
      got += bytesRead;
    }
    return true;
  }

  /**
   * Reads consecutive bytes of one slab, from `at` bytes into `slot` on, scattered over `into` in
   * order (one preadv); the bytes read, short when the slab ends first.
   */
  readv(slot: number, into: readonly Buffer[], at: number): Promise<number> {
    // A lone buffer (the common case: a span inside one block) takes the plain pread, a little cheaper.
    if (into.length === 1) {
      const one = into[0] as Buffer;
      return this.readAt(slot, one, 0, one.length, at);
    }
    return this.#onFd(slot, at, (fd, position, done) => readvFd(fd, into as Buffer[], position, done));
  }

  /** Reads `length` bytes at `at` inside the slot into `into` at `offset` (one pread); the bytes read. */
  readAt(slot: number, into: Buffer, offset: number, length: number, at: number): Promise<number> {
    return this.#onFd(slot, at, (fd, position, done) => readFd(fd, into, offset, length, position, done));
  }

  // The warm read path: one callback call on the slab's descriptor, not FileHandle.read's promise
  // chain (an async wrapper, a ref/unref of the handle and a result object per call).
  #onFd(
    slot: number,
    at: number,
    call: (fd: number, position: number, done: (err: Error | null, n: number) => void) => void,
  ): Promise<number> {
    const slab = this.slabOf(slot);
    const f = this.#ready.get(slab);
    if (!f) {
      if (this.#closed) return Promise.reject(closedError());
      return this.file(slab).then(() => this.#onFd(slot, at, call));
    }
    this.#reading++;
    return new Promise<number>((resolve, reject) => {
      call(f.fh.fd, this.offsetOf(slot) + at, (err, n) => {
        if (--this.#reading === 0) this.#idle?.();
        if (err) reject(err);
        else resolve(n);
      });
    });
  }

  /** Makes what was written to these slabs durable (data, and the size a write past the end set). */
  async sync(slabs: Iterable<number>): Promise<void> {
    await Promise.all([...slabs].map(async (s) => (await this.file(s)).fh.datasync()));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#ready.clear();
    if (this.#reading > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    this.#idle = undefined;
    const files = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(files.map((f) => f.then((x) => x.fh.close()).catch(() => {})));
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
