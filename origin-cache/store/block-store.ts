/**
 * The bounded on-disk block store: a few slab files of fixed-size, 4 KiB-aligned slots (see
 * slot.ts), written at offsets through one long-lived handle per slab, fsynced in groups. The
 * slabs hold `floor(maxBytes / slotBytes)` slots and grow only as slots are first used, so the
 * directory never holds more than `maxBytes`, even for an instant. A block is visible to `has`
 * and `read` once its data and header are written (until then the caller serves it from
 * memory), and durable once the group fdatasync that follows, at most `commitMs` later, has run:
 * one sync covers the writes of many pulls. A power cut can lose only blocks not yet synced; their
 * slots fail their header or CRC check on restart and read as misses, pulled again. A block whose
 * sync fails is dropped. The blocks of one pull are put together (`putRun`): they take adjacent slots where
 * those are free and go to disk in one write per run of adjacent slots, each slot still a
 * self-checking header and its data. Each block's CRC-32 is checked once: when it lands (computed from the bytes in hand)
 * or on its first read after a restart; a mismatch drops the block and reads as a miss.
 * Eviction is least recently used first, blocks the plan needs soon last. When no slot can be
 * had, `put` declines and the caller streams the bytes through uncached.
 */
import { stat, truncate } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { blockKey, type BlockId } from "./block-id.js";
import { FreeSlots } from "./free-slots.js";
import { dirModes, ownDir } from "./own-dir.js";
import { GroupCommit } from "./group-commit.js";
import { SlabFiles } from "./slab-files.js";
import {
  ALIGN,
  SLOT_HEADER,
  alignUp,
  decodeSlotHeader,
  isBlank,
  slotBytesFor,
  slotName,
  writeSlotHeader,
  type SlotHeader,
  type SlotName,
} from "./slot.js";

export type { BlockId };

export interface BlockStoreOptions {
  readonly dir: string;
  readonly maxBytes: number;
  /** Largest block stored; every slot holds one block of up to this size. */
  readonly blockSize: number;
  /** Most bytes in one slab file; default 4 GiB. */
  readonly slabBytes?: number;
  /** A write is made durable at most this long after it is done, by one fdatasync for every write meanwhile; default 1 s. */
  readonly commitMs?: number;
  /** A group fdatasync starts at once when this many bytes have been written since the last; default 64 MiB. */
  readonly commitBytes?: number;
  /** True while the plan needs the block soon; such blocks are evicted last. */
  readonly protect?: (key: string, index: number) => boolean;
  readonly onEvict?: (bytes: number) => void;
  /** A block that failed verification, by where it was (slab path @ offset). */
  readonly onCorrupt?: (where: string) => void;
  /** A group fdatasync failed: the blocks written in its group were dropped. */
  readonly onSyncError?: (err: unknown, blocks: number) => void;
  /** Directories 2750 and files 0640 (the directory's group may read), not 0700 and 0600. */
  readonly groupRead?: boolean;
}

interface Entry {
  readonly id: BlockId;
  readonly slot: number;
  readonly length: number;
  readonly crc: number;
  /** Checked against its CRC (true), being checked (the whole block, or undefined when bad), or not yet. */
  verified: boolean | Promise<Buffer | undefined>;
  readers: number;
  /** Dropped while being read: the slot is freed when the last reader is done. */
  dropped: boolean;
}

/** A block on its way into a slot. */
interface Landing {
  readonly id: BlockId;
  readonly k: string;
  /** Its place in putRun's arguments. */
  readonly at: number;
  readonly slot: number;
  readonly header: Buffer;
  readonly data: Uint8Array;
  readonly crc: number;
}

/** A piece of a stored block for readInto: `[start, start + length)` of its data, to `at` in the buffer. */
export interface Piece {
  readonly id: BlockId;
  /** blockKey(id), when the caller has it already. */
  readonly key?: string;
  readonly start: number;
  readonly length: number;
  readonly at: number;
}

const DEFAULT_SLAB_BYTES = 4 * 2 ** 30;
/** Most pieces in one preadv: each takes two iovecs (its bytes and the gap to the next), under IOV_MAX (1024). */
const RUN_PIECES = 256;
/** What readInto answers for a single piece: read, or not (shared, never changed). */
const NONE_FAILED: readonly number[] = Object.freeze([]);
const FIRST_FAILED: readonly number[] = Object.freeze([0]);
/** Most slots in one slab write: each takes up to three iovecs (header, data, padding), under IOV_MAX (1024). */
const RUN_SLOTS = 256;
const STORED = Promise.resolve(true);
const DECLINED = Promise.resolve(false);
/** Slot headers read at once while rebuilding the index. */
const REBUILD_READS = 32;
/** Header pages allocated at once when none is free (one allocation, not one per pull). */
const HEADER_PAGES_AT_ONCE = 16;
/** Free header pages kept past the writes that used them (4 KiB each). */
const HEADER_PAGES_KEPT = 512;

export class BlockStore {
  readonly #opts: BlockStoreOptions;
  readonly #slotBytes: number;
  readonly #slabs: SlabFiles;
  readonly #commit: GroupCommit;
  // Map order is recency order: a hit re-inserts its entry at the end.
  readonly #entries = new Map<string, Entry>();
  // Slots holding no block and not being written.
  readonly #free: FreeSlots;
  readonly #writing = new Map<string, Promise<boolean>>();
  #seq = 0n;
  #scratch = Buffer.alloc(0);
  #zeros = Buffer.alloc(0);
  // Pages for the headers of slab writes: one is taken per block written and given back when its
  // write ends (only that write reads it). A zeroed allocation per pull was fresh memory each time:
  // its pages faulted in and cleared by the kernel, then zeroed again.
  readonly #headerPages: Buffer[] = [];
  #slabWrites = 0;
  #syncs = 0;
  #evictions = 0;
  #closed = false;

  private constructor(opts: BlockStoreOptions) {
    this.#opts = opts;
    this.#slotBytes = slotBytesFor(opts.blockSize);
    const slots = Math.floor(opts.maxBytes / this.#slotBytes);
    this.#free = new FreeSlots(slots);
    const slotsPerSlab = Math.max(1, Math.floor((opts.slabBytes ?? DEFAULT_SLAB_BYTES) / this.#slotBytes));
    this.#slabs = new SlabFiles({
      dir: join(opts.dir, "slabs"),
      slotBytes: this.#slotBytes,
      slotsPerSlab,
      slots,
      fileMode: dirModes(opts.groupRead === true).file,
    });
    this.#commit = new GroupCommit({
      ms: opts.commitMs ?? 1000,
      bytes: opts.commitBytes ?? 64 << 20,
      sync: (s) => {
        this.#syncs += s.size;
        return this.#slabs.sync(s);
      },
    });
  }

  /** Opens the store, dropping what another layout or a smaller bound left, and re-indexing every intact slot. */
  static async open(opts: BlockStoreOptions): Promise<BlockStore> {
    await ownDir(opts.dir, dirModes(opts.groupRead === true));
    const store = new BlockStore(opts);
    await store.#rebuild();
    return store;
  }

  get #slots(): number {
    return Math.floor(this.#opts.maxBytes / this.#slotBytes);
  }

  async #rebuild(): Promise<void> {
    const slabs = this.#slabs;
    const perSlab = slabs.slotsPerSlab;
    const found = new Map<string, { slot: number; header: SlotHeader }>();
    const used = new Set<number>();
    // Torn or superseded slots: their headers are blanked so the next restart does not see them.
    const stale: number[] = [];
    const drop = (slot: number): void => {
      this.#opts.onCorrupt?.(slabs.describe(slot));
      stale.push(slot);
    };
    for (const slab of await slabs.existing()) {
      const path = slabs.pathOf(slab);
      const first = slab * perSlab;
      const count = Math.min(perSlab, this.#slots - first);
      let { size } = await stat(path);
      // A bound smaller than last time: slots past it are gone.
      if (size > count * this.#slotBytes) {
        await truncate(path, count * this.#slotBytes);
        size = count * this.#slotBytes;
      }
      const inFile = Math.ceil(size / this.#slotBytes);
      for (let s = 0; s < inFile; s += REBUILD_READS) {
        const heads = await Promise.all(
          Array.from({ length: Math.min(REBUILD_READS, inFile - s) }, async (_, i) => {
            // Zeroed, so a header the slab's end cuts short reads as what it is: torn, or blank.
            const buf = Buffer.alloc(SLOT_HEADER);
            await slabs.read(first + s + i, buf, 0, SLOT_HEADER);
            return buf;
          }),
        );
        heads.forEach((buf, i) => {
          const slot = first + s + i;
          if (isBlank(buf)) return;
          const h = decodeSlotHeader(buf);
          const end = slabs.offsetOf(slot) + SLOT_HEADER + alignUp(h?.dataLength ?? 0);
          if (!h || h.slotBytes !== this.#slotBytes || h.dataLength > this.#slotBytes - SLOT_HEADER || end > size)
            return drop(slot);
          if (h.seq >= this.#seq) this.#seq = h.seq + 1n;
          const k = blockKey(h);
          const had = found.get(k);
          // An evicted copy's header stays until its slot is reused: the newest copy wins.
          if (had && had.header.seq > h.seq) return void stale.push(slot);
          if (had) {
            used.delete(had.slot);
            stale.push(had.slot);
          }
          found.set(k, { slot, header: h });
          used.add(slot);
        });
      }
    }
    for (const { slot, header: h } of [...found.values()].sort((a, b) => (a.header.seq < b.header.seq ? -1 : 1))) {
      if (!used.has(slot)) continue;
      const id = { key: h.key, etag: h.etag, index: h.index };
      this.#entries.set(blockKey(id), {
        id,
        slot,
        length: h.dataLength,
        crc: h.dataCrc,
        verified: false,
        readers: 0,
        dropped: false,
      });
    }
    await Promise.all(stale.map((slot) => slabs.write(slot, [Buffer.alloc(SLOT_HEADER)]).catch(() => {})));
    for (let s = this.#slots - 1; s >= 0; s--) if (!used.has(s)) this.#free.give(s);
  }

  has(id: BlockId): boolean {
    return this.#entries.has(blockKey(id));
  }

  /** `has` by blockKey. */
  hasKey(key: string): boolean {
    return this.#entries.has(key);
  }

  /**
   * Reads `[start, start + length)` of a block's data. Undefined on a miss; a block that fails
   * its checksum (checked on its first read after a restart) is dropped and reads as a miss.
   */
  async read(id: BlockId, start: number, length: number): Promise<Buffer | undefined> {
    const k = blockKey(id);
    const e = this.#entries.get(k);
    if (!e || this.#closed || start + length > e.length) return undefined;
    this.#entries.delete(k);
    this.#entries.set(k, e);
    e.readers++;
    try {
      if (e.verified !== true) {
        if (e.verified === false) e.verified = this.#verify(e);
        const whole = await e.verified;
        if (!whole) return undefined;
        e.verified = true;
        return whole.subarray(start, start + length);
      }
      const buf = Buffer.allocUnsafe(length);
      if (await this.#slabs.read(e.slot, buf, SLOT_HEADER + start, length)) return buf;
      this.#corrupt(e);
      return undefined;
    } catch {
      // Unreadable (EIO and the like): a miss, fetched again.
      if (!this.#closed) this.#corrupt(e);
      return undefined;
    } finally {
      if (--e.readers === 0 && e.dropped) this.#release(e.slot);
    }
  }

  /**
   * Reads stored pieces into `into`, one preadv per run of pieces in consecutive slots of one
   * slab (the slot headers between them land in a scratch buffer), and resolves with the indexes
   * of the pieces it did not serve (not stored, or found bad), for the caller to get elsewhere.
   * Blocks not yet verified since a restart are read (and checked) whole, as `read` does.
   */
  readInto(pieces: readonly Piece[], into: Buffer): Promise<readonly number[]> {
    const one = pieces.length === 1 ? this.#readOne(pieces[0] as Piece, into) : undefined;
    return one ?? this.#readRuns(pieces, into);
  }

  /**
   * The common warm read, a span inside one verified block: one pread into place and nothing
   * built per read but its promise. Undefined when the block is not stored or not verified yet.
   */
  #readOne(p: Piece, into: Buffer): Promise<readonly number[]> | undefined {
    const k = p.key ?? blockKey(p.id);
    const e = this.#entries.get(k);
    if (e?.verified !== true || this.#closed || p.start + p.length > e.length) return undefined;
    this.#entries.delete(k);
    this.#entries.set(k, e);
    e.readers++;
    const done = (ok: boolean): readonly number[] => {
      if (--e.readers === 0 && e.dropped) this.#release(e.slot);
      return ok ? NONE_FAILED : FIRST_FAILED;
    };
    return this.#slabs.readAt(e.slot, into, p.at, p.length, SLOT_HEADER + p.start).then(
      (n) => done(n === p.length),
      () => done(false),
    );
  }

  async #readRuns(pieces: readonly Piece[], into: Buffer): Promise<number[]> {
    const failed: number[] = [];
    const held: Entry[] = [];
    const work: Promise<void>[] = [];
    let run: { first: number; entries: Entry[]; buffers: Buffer[]; bytes: number; from: number } | undefined;
    const flush = (): void => {
      if (!run) return;
      const r = run;
      run = undefined;
      work.push(
        this.#slabs.readv(r.entries[0]!.slot, r.buffers, SLOT_HEADER + r.from).then(
          (n) => {
            if (n !== r.bytes) for (let i = 0; i < r.entries.length; i++) failed.push(r.first + i);
          },
          () => {
            for (let i = 0; i < r.entries.length; i++) failed.push(r.first + i);
          },
        ),
      );
    };
    let prev: Entry | undefined;
    for (let i = 0; i < pieces.length; i++) {
      const p = pieces[i] as Piece;
      const k = p.key ?? blockKey(p.id);
      const e = this.#entries.get(k);
      if (!e || this.#closed || p.start + p.length > e.length) {
        flush();
        prev = undefined;
        failed.push(i);
        continue;
      }
      if (e.verified !== true) {
        flush();
        prev = undefined;
        work.push(
          this.read(p.id, p.start, p.length).then((buf) => {
            if (buf) buf.copy(into, p.at);
            else failed.push(i);
          }),
        );
        continue;
      }
      this.#entries.delete(k);
      this.#entries.set(k, e);
      e.readers++;
      held.push(e);
      const out = into.subarray(p.at, p.at + p.length);
      const last = pieces[i - 1];
      // The next slot's data follows this slot's at a fixed gap (its padding and the next header).
      const joins =
        run &&
        prev &&
        last &&
        e.slot === prev.slot + 1 &&
        this.#slabs.slabOf(e.slot) === this.#slabs.slabOf(prev.slot) &&
        p.start === 0 &&
        last.start + last.length === prev.length &&
        run.entries.length < RUN_PIECES;
      if (joins && run && prev) {
        const gap = this.#slotBytes - prev.length;
        run.buffers.push(this.#gap(gap), out);
        run.bytes += gap + p.length;
        run.entries.push(e);
      } else {
        flush();
        run = { first: i, entries: [e], buffers: [out], bytes: p.length, from: p.start };
      }
      prev = e;
    }
    flush();
    try {
      await (work.length === 1 ? work[0] : Promise.all(work));
    } finally {
      for (const e of held) if (--e.readers === 0 && e.dropped) this.#release(e.slot);
    }
    return failed.sort((a, b) => a - b);
  }

  /**
   * Holds the blocks of `ids` where they are (no eviction, no reuse of their slots) until the
   * returned release is called, each checked against its CRC first if it has not been since a
   * restart. Where each block's data lies: slab path and byte offset, and its length. Undefined
   * when one of them is not (or no longer) stored: nothing is held then.
   */
  async hold(
    ids: readonly BlockId[],
  ): Promise<{ blocks: { path: string; offset: number; length: number }[]; release: () => void } | undefined> {
    const held: Entry[] = [];
    const keys: string[] = [];
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      for (const e of held) if (--e.readers === 0 && e.dropped) this.#release(e.slot);
    };
    for (const id of ids) {
      const k = blockKey(id);
      const e = this.#entries.get(k);
      if (!e || this.#closed) return void release();
      e.readers++;
      held.push(e);
      keys.push(k);
    }
    try {
      for (const e of held) {
        if (e.verified === true) continue;
        if (e.verified === false) e.verified = this.#verify(e);
        if (!(await e.verified)) return void release();
        e.verified = true;
      }
    } catch {
      return void release();
    }
    // Checked, but dropped meanwhile (a failed read elsewhere): not to be handed out.
    if (held.some((e) => e.dropped)) return void release();
    const blocks = held.map((e, i) => {
      const k = keys[i] as string;
      this.#entries.delete(k);
      this.#entries.set(k, e);
      return {
        path: this.#slabs.absolutePathOf(this.#slabs.slabOf(e.slot)),
        offset: this.#slabs.offsetOf(e.slot) + SLOT_HEADER,
        length: e.length,
      };
    });
    return { blocks, release };
  }

  /** Scratch bytes for what lies between two slots' data in a run (contents never read). */
  #gap(bytes: number): Buffer {
    if (this.#scratch.length < bytes) this.#scratch = Buffer.allocUnsafe(bytes);
    return this.#scratch.subarray(0, bytes);
  }

  async #verify(e: Entry): Promise<Buffer | undefined> {
    const buf = Buffer.allocUnsafe(e.length);
    if ((await this.#slabs.read(e.slot, buf, SLOT_HEADER, e.length)) && crc32(buf) === e.crc) return buf;
    this.#corrupt(e);
    return undefined;
  }

  #corrupt(e: Entry): void {
    if (this.#entries.get(blockKey(e.id)) !== e) return;
    this.#opts.onCorrupt?.(this.#slabs.describe(e.slot));
    this.#entries.delete(blockKey(e.id));
    if (e.readers === 0) this.#release(e.slot);
    else e.dropped = true;
  }

  /** Frees a dropped block's slot once its header is blanked, so a restart does not find it again. */
  #release(slot: number): void {
    void this.#slabs
      .write(slot, [Buffer.alloc(SLOT_HEADER)])
      .catch(() => {})
      .finally(() => this.#free.give(slot));
  }

  /** Stores a block if a slot can be had; false means the caller serves it uncached. */
  put(id: BlockId, data: Uint8Array): Promise<boolean> {
    return this.putRun([id], [data])[0] as Promise<boolean>;
  }

  /**
   * Stores consecutive blocks of one pull, `datas[i]` as `ids[i]`: each takes the slot after the
   * previous one's where that is free (else a free slot or the least recently used block's, as
   * `put`), and each run of adjacent slots in one slab is written with one `writev`. One promise
   * per block, as `put` answers; blocks of one run share theirs. The ids are distinct.
   */
  putRun(ids: readonly BlockId[], datas: readonly Uint8Array[]): Promise<boolean>[] {
    const out: Promise<boolean>[] = new Array(ids.length);
    let run: Landing[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      const r = run;
      run = [];
      const written = this.#writeRun(r);
      for (const l of r) {
        out[l.at] = written;
        this.#writing.set(l.k, written);
      }
      void written
        .finally(() => {
          for (const l of r) if (this.#writing.get(l.k) === written) this.#writing.delete(l.k);
        })
        .catch(() => {});
    };
    let name: SlotName | undefined;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as BlockId;
      const data = datas[i] as Uint8Array;
      const k = blockKey(id);
      if (this.#entries.has(k)) {
        out[i] = STORED;
        continue;
      }
      const writing = this.#writing.get(k);
      if (writing) {
        out[i] = writing;
        continue;
      }
      if (this.#closed || data.length > this.#slotBytes - SLOT_HEADER) {
        out[i] = DECLINED;
        continue;
      }
      if (name?.key !== id.key || name.etag !== id.etag) name = slotName(id.key, id.etag);
      const last = run[run.length - 1];
      const slot = name && this.#allocate(last && last.slot + 1);
      if (name === undefined || slot === undefined) {
        out[i] = DECLINED;
        continue;
      }
      const header = this.#headerPage();
      const crc = crc32(data);
      const h = {
        index: id.index,
        dataLength: data.length,
        dataCrc: crc,
        slotBytes: this.#slotBytes,
        seq: this.#seq++,
      };
      writeSlotHeader(header, name, h);
      const slabs = this.#slabs;
      if (last && (slot !== last.slot + 1 || slabs.slabOf(slot) !== slabs.slabOf(last.slot) || run.length >= RUN_SLOTS))
        flush();
      run.push({ id, k, at: i, slot, header, data, crc });
    }
    flush();
    return out;
  }

  /** Writes a run of adjacent slots of one slab in one call; then the blocks are visible, and durable after the group's sync. */
  async #writeRun(run: readonly Landing[]): Promise<boolean> {
    const parts: Buffer[] = [];
    for (let i = 0; i < run.length; i++) {
      const l = run[i] as Landing;
      parts.push(l.header, Buffer.from(l.data.buffer, l.data.byteOffset, l.data.length));
      // The last slot ends at its data's 4 KiB boundary; a slot before another is filled to the next one's header.
      const pad =
        (i === run.length - 1 ? alignUp(l.data.length, ALIGN) : this.#slotBytes - SLOT_HEADER) - l.data.length;
      if (pad > 0) parts.push(this.#zeroes(pad));
    }
    const first = (run[0] as Landing).slot;
    let bytes = 0;
    for (const p of parts) bytes += p.length;
    try {
      this.#slabWrites++;
      await this.#slabs.write(first, parts);
    } catch (err) {
      // Disk full or similar: the slots are free again and the caller serves the bytes uncached
      // and logs why (a silent decline would hide a full disk).
      for (const l of run) this.#free.give(l.slot);
      throw err;
    } finally {
      // The write has ended (done or failed): nothing reads its headers any more.
      for (const l of run) this.#giveHeaderPage(l.header);
    }
    // Verified as they land: each CRC was computed from these very bytes.
    const entries = run.map(
      ({ id, slot, data, crc }): Entry => ({
        id,
        slot,
        length: data.length,
        crc,
        verified: true,
        readers: 0,
        dropped: false,
      }),
    );
    for (let i = 0; i < run.length; i++) this.#entries.set((run[i] as Landing).k, entries[i] as Entry);
    this.#commit.add(this.#slabs.slabOf(first), bytes).catch((err: unknown) => this.#unsynced(entries, err));
    return true;
  }

  /** The blocks of a group whose sync failed: dropped (those still stored), to be pulled again. */
  #unsynced(entries: readonly Entry[], err: unknown): void {
    let dropped = 0;
    for (const e of entries) {
      const k = blockKey(e.id);
      if (this.#entries.get(k) !== e) continue;
      this.#entries.delete(k);
      dropped++;
      if (e.readers === 0) this.#release(e.slot);
      else e.dropped = true;
    }
    if (!this.#closed) this.#opts.onSyncError?.(err, dropped);
  }

  /** A zeroed SLOT_HEADER-byte page for one block's header, reused from an ended write where one is free. */
  #headerPage(): Buffer {
    const pages = this.#headerPages;
    const page = pages.pop();
    if (page) return page.fill(0);
    const chunk = Buffer.alloc(HEADER_PAGES_AT_ONCE * SLOT_HEADER);
    for (let i = 1; i < HEADER_PAGES_AT_ONCE; i++) pages.push(chunk.subarray(i * SLOT_HEADER, (i + 1) * SLOT_HEADER));
    return chunk.subarray(0, SLOT_HEADER);
  }

  #giveHeaderPage(page: Buffer): void {
    if (this.#headerPages.length < HEADER_PAGES_KEPT) this.#headerPages.push(page);
  }

  /** Zero bytes to pad a slot with (only read by the write). */
  #zeroes(bytes: number): Buffer {
    if (this.#zeros.length < bytes) this.#zeros = Buffer.alloc(bytes);
    return this.#zeros.subarray(0, bytes);
  }

  /**
   * `want` when it is a free slot, else a free slot, or the least recently used block's (blocks
   * the plan needs soon last); undefined when every slot is busy.
   */
  #allocate(want?: number): number | undefined {
    if (want !== undefined && want < this.#slots && this.#free.takeIf(want)) return want;
    const free = this.#free.take();
    if (free !== undefined) return free;
    let victim: Entry | undefined;
    for (const e of this.#entries.values()) {
      if (e.readers > 0) continue;
      if (!this.#opts.protect?.(e.id.key, e.id.index)) {
        victim = e;
        break;
      }
      victim ??= e;
    }
    if (!victim) return undefined;
    this.#entries.delete(blockKey(victim.id));
    this.#evictions++;
    this.#opts.onEvict?.(this.#slotBytes);
    return victim.slot;
  }

  /** Makes every write done so far durable now, without waiting for its group's time. */
  async flush(): Promise<void> {
    await this.#commit.flush();
  }

  /** Waits for writes in flight to be committed, then closes every slab handle. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#writing.values()]);
    await this.#commit.flush().catch(() => {});
    await this.#slabs.close();
  }

  /** Bytes of slots holding blocks (each block takes a whole slot). */
  get residentBytes(): number {
    return this.#entries.size * this.#slotBytes;
  }
  get blocks(): number {
    return this.#entries.size;
  }
  /** Slab writes of blocks so far (one per run of adjacent slots). */
  get slabWrites(): number {
    return this.#slabWrites;
  }
  /** fdatasync calls of group commits so far (one per slab a group touched). */
  get syncs(): number {
    return this.#syncs;
  }
  get evictions(): number {
    return this.#evictions;
  }
  get maxBytes(): number {
    return this.#opts.maxBytes;
  }
}
