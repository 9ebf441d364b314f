/**
 * The engine's side of the shared-memory ring: one file per slot in a tmpfs folder, grown when a
 * batch needs more, handed out only after the client has released it. A free slot may also be
 * lent to the pipeline as the memory a batch is decoded into (`lend`, mapped with mapShared):
 * such a batch is handed to the client where it lies, with no copy; any other batch is copied in
 * with pwritev. A slot is free, lent (the pipeline writes it) or the client's (its arrays view
 * it); only a free one is lent or written. Not thread-safe; one engine owns it.
 */
import { closeSync, ftruncateSync, openSync, unlinkSync, writevSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { SdkError, SdkErrorCode } from "../errors.js";
import { type DeviceBuffer, type DeviceFrame, mapShared } from "../../native/index.js";

/** Slot files grow in steps of this, so a batch slightly larger than the last does not resize them again. */
const GROW_STEP = 2 << 20;

/** The fewest and most slots of a ring, whatever the options. */
const MIN_SLOTS = 4;
const MAX_SLOTS = 64;

/**
 * Slots of the ring for a dataset: the batches being decoded ahead (into their slots), the one in
 * the user's hands, one more for a batch the engine must copy, and one for the group the decoder
 * starts next. The engine alone decides it; the client maps the files `opened` lists.
 *
 * @example
 * ringSlots({ prefetch: 8, batch: 1 }); // 11
 */
export function ringSlots(o: { readonly prefetch: number; readonly batch: number }): number {
  return Math.min(MAX_SLOTS, Math.max(MIN_SLOTS, Math.ceil(o.prefetch / o.batch) + 3));
}

interface Slot {
  path: string;
  fd: number;
  capacity: number;
  /** The client's (a batch handed out and not yet released) or lent to the pipeline. */
  held: boolean;
  /** Lent: the pipeline decodes into `memory`; it comes back with `give`. */
  lent: boolean;
  /** The file mapped here (its first `capacity` bytes), made when the slot is first lent. */
  memory?: ArrayBuffer;
  /** What the client's release of a batch handed out in place runs (the pipeline lets go of it). */
  onRelease?: () => void;
  /** Device memory for batches that stay on the GPU (CUDA IPC), allocated on the first one. */
  gpu?: { buffer: DeviceBuffer; handle: string };
}

export class SlotRing {
  private readonly slots: Slot[];
  private readonly waiters: ((slot: number) => void)[] = [];
  /** Woken when a slot becomes free, on `poke`, and on close. */
  private watchers: (() => void)[] = [];
  private linked = true;
  private closed = false;
  /** Bytes of batches written into slots with pwritev, and of batches handed out where they were decoded. */
  bytesCopied = 0;
  bytesPlaced = 0;
  /** Counts the streams the ring has served (`detach`): a pool made for an earlier one no longer lends. */
  epoch = 0;
  /**
   * Free slots spoken for by clips waiting for a decoder (`reserve`): lent once one writes them,
   * so a slot's pages are touched only when a decoder needs them, while the engine still pulls no
   * further ahead than the free slots allow.
   */
  private reserved = 0;
  private readonly stem: string;
  /** Slot files made since the ring was (`renewHeld`), for fresh names. */
  private renewed = 0;

  /** Creates `count` empty slot files under `dir`, readable and writable by this user only. */
  constructor(
    readonly dir: string,
    count: number,
  ) {
    this.stem = join(dir, `ec-${process.pid}-${randomBytes(6).toString("hex")}`);
    this.slots = [];
    try {
      for (let i = 0; i < count; i++) {
        const path = `${this.stem}-${i}`;
        this.slots.push({ path, fd: openSync(path, "wx+", 0o600), capacity: 0, held: false, lent: false });
      }
    } catch (err) {
      this.close();
      throw this.unavailable(err);
    }
  }

  private unavailable(err: unknown): SdkError {
    return new SdkError(
      SdkErrorCode.ShmUnavailable,
      `Expected a writable folder for shared memory at ${this.dir} but creating a slot file failed: ${(err as Error).message}`,
      { cause: err },
    );
  }

  get files(): { path: string; capacity: number }[] {
    return this.slots.map((s) => ({ path: s.path, capacity: s.capacity }));
  }

  /** Removes the names once the client holds its own descriptors: nothing is left behind by a crash after this. */
  unlink(): void {
    if (!this.linked) return;
    this.linked = false;
    for (const s of this.slots) {
      try {
        unlinkSync(s.path);
      } catch {
        // Already gone: nothing to clean.
      }
    }
  }

  /** A free slot, now or once the client releases one (-1 if the ring closes first); `onWait` runs once if it has to wait. */
  acquire(onWait: () => void): Promise<number> {
    const free = this.slots.findIndex((s) => !s.held);
    if (free >= 0) {
      this.slots[free]!.held = true;
      return Promise.resolve(free);
    }
    onWait();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The client's tensors over `slot` are gone: the slot passes straight to a waiter, or becomes free. */
  release(slot: number): void {
    const s = this.slots[slot];
    if (!s?.held || s.lent)
      throw new SdkError(SdkErrorCode.Protocol, `Expected a held slot below ${this.slots.length} but received ${slot}`);
    const onRelease = s.onRelease;
    if (onRelease) {
      // Handed out in place: the memory is the pipeline's again until it gives it back.
      s.onRelease = undefined;
      s.lent = true;
      onRelease();
      return;
    }
    this.free(s, slot);
  }

  private free(s: Slot, slot: number): void {
    const next = this.waiters.shift();
    if (next) next(slot);
    else {
      s.held = false;
      this.poke();
    }
  }

  /** Whether a slot is free now (neither the client's nor lent) and not spoken for by a reservation. */
  get hasFree(): boolean {
    return this.freeCount > this.reserved;
  }

  private get freeCount(): number {
    return this.slots.reduce((n, s) => n + (s.held ? 0 : 1), 0);
  }

  /**
   * Speaks for a free slot that a later `lend(bytes, reserve, true)` takes; false (nothing held)
   * where lending it would leave fewer than `reserve` slots for the client's batch and a copied one.
   */
  reserve(reserve: number): boolean {
    if (!this.lendable(reserve) || this.freeCount <= this.reserved) return false;
    this.reserved++;
    return true;
  }

  /** A reservation that ends without a lend. */
  unreserve(): void {
    if (this.reserved === 0) return;
    this.reserved--;
    this.poke();
  }

  /** Whether one more slot may be lent or reserved with `reserve` slots left for the client's batch and a copied one. */
  private lendable(reserve: number): boolean {
    return (
      !this.closed && this.waiters.length === 0 && this.slots.length - this.lentCount - this.reserved - 1 >= reserve
    );
  }

  /** Resolves when a slot becomes free, `poke` is called or the ring closes: the caller checks again. */
  changed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push(resolve));
  }

  /** Wakes whoever waits in `changed()`. */
  poke(): void {
    for (const w of this.watchers.splice(0)) w();
  }

  /** Slots lent to the pipeline now (the client counts them when it decides the ring is full). */
  get lentCount(): number {
    return this.slots.reduce((n, s) => n + (s.lent ? 1 : 0), 0);
  }

  /**
   * The mapped memory of a free slot, at least `bytes` long, lent to the pipeline; undefined when
   * lending would leave fewer than `reserve` slots for the client's batch and a copied one.
   * `reserved`: a slot `reserve` spoke for (counted already; undefined only if none is free now).
   */
  lend(bytes: number, reserve: number, reserved = false): ArrayBuffer | undefined {
    if (reserved && this.reserved > 0) {
      this.reserved--;
      if (this.closed) return undefined;
    } else if (!this.lendable(reserve)) return undefined;
    // The lowest free slot: the ones written before, whose pages are faulted in already.
    const slot = this.slots.findIndex((s) => !s.held);
    if (slot < 0) return undefined;
    const s = this.slots[slot]!;
    if (!s.memory || bytes > s.capacity) {
      this.grow(s, bytes);
      s.memory = mapShared(s.fd, s.capacity);
    }
    s.held = true;
    s.lent = true;
    return s.memory;
  }

  /** The pipeline is done with lent `memory`: its slot is free again (or a waiter's). */
  give(memory: ArrayBuffer): boolean {
    const slot = this.slots.findIndex((s) => s.lent && s.memory === memory);
    if (slot < 0) return false;
    this.slots[slot]!.lent = false;
    this.free(this.slots[slot]!, slot);
    return true;
  }

  /**
   * The slot whose lent memory holds `frames` back to back from its start (a batch decoded in
   * place), now the client's until it releases it, when `onRelease` runs; else undefined.
   */
  handOver(frames: readonly Uint8Array[], byteLength: number, onRelease: () => void): number | undefined {
    const memory = frames[0]?.buffer;
    const slot = this.slots.findIndex((s) => s.lent && s.memory === memory);
    if (slot < 0) return undefined;
    let at = 0;
    for (const f of frames) {
      if (f.buffer !== memory || f.byteOffset !== at) return undefined;
      at += f.byteLength;
    }
    if (at !== byteLength) return undefined;
    const s = this.slots[slot]!;
    s.lent = false;
    s.onRelease = onRelease;
    this.bytesPlaced += byteLength;
    return slot;
  }

  /** Capacity of `slot`'s file now. */
  capacityOf(slot: number): number {
    return this.slots[slot]!.capacity;
  }

  /** Grows the slot's file to hold `bytes` (in steps); a mapping made before stays as long as it was. */
  private grow(s: Slot, bytes: number): void {
    if (bytes <= s.capacity) return;
    const capacity = Math.ceil(bytes / GROW_STEP) * GROW_STEP;
    ftruncateSync(s.fd, capacity);
    s.capacity = capacity;
  }

  /** Writes the frames back to back from the slot's start, growing the file first if they do not fit; returns its capacity. */
  write(slot: number, frames: readonly Uint8Array[], byteLength: number): number {
    const s = this.slots[slot]!;
    try {
      if (byteLength > s.capacity) {
        this.grow(s, byteLength);
        // A larger file needs a larger mapping; the next lend makes it.
        s.memory = undefined;
      }
      let at = 0;
      // pwritev takes at most IOV_MAX (1024) buffers at once.
      for (let i = 0; i < frames.length; i += 1024) {
        const group = frames.slice(i, i + 1024);
        const want = group.reduce((n, f) => n + f.length, 0);
        const wrote = writevSync(s.fd, group as Uint8Array[], at);
        if (wrote !== want) throw new Error(`short write: ${wrote} of ${want} bytes`);
        at += wrote;
      }
      this.bytesCopied += byteLength;
    } catch (err) {
      if (err instanceof SdkError) throw err;
      throw new SdkError(
        SdkErrorCode.ShmFull,
        `Expected room for a ${byteLength}-byte batch in shared memory (${s.path}) but writing failed: ${(err as Error).message}; free space there or set EC_SHM_DIR`,
        { cause: err },
      );
    }
    return s.capacity;
  }

  /**
   * Packs device frames back to back into the slot's device memory (same device), reallocating it
   * first when it is too small or elsewhere; returns the memory's CUDA IPC handle (base64) and size.
   */
  async writeDevice(
    slot: number,
    frames: readonly DeviceFrame[],
    byteLength: number,
  ): Promise<{ handle: string; capacity: number }> {
    const { allocDevice, ipcHandle, packDeviceFrame } = await import("../../native/index.js");
    const s = this.slots[slot]!;
    const device = frames[0]!.device;
    if (!s.gpu || s.gpu.buffer.device !== device || s.gpu.buffer.byteLength < byteLength) {
      const buffer = allocDevice(device, Math.ceil(byteLength / GROW_STEP) * GROW_STEP);
      s.gpu = { buffer, handle: Buffer.from(ipcHandle(buffer)).toString("base64") };
    }
    let at = 0;
    for (const f of frames) at += packDeviceFrame(s.gpu.buffer, at, f);
    return { handle: s.gpu.handle, capacity: s.gpu.buffer.byteLength };
  }

  /**
   * The stream the ring served is stopped; the ring stays, with its files and mappings, for the
   * next one (whose pages are then not faulted in again). Whoever waits for a slot gets -1, a
   * batch handed out in place becomes a plain held slot (the client's release frees it), and the
   * stopped stream's pool lends no more. Slots still lent come back with `give`.
   */
  detach(): void {
    this.epoch++;
    this.reserved = 0;
    this.bytesCopied = 0;
    this.bytesPlaced = 0;
    for (const s of this.slots) s.onRelease = undefined;
    for (const w of this.waiters.splice(0)) w(-1);
    this.poke();
  }

  /**
   * Gives each slot the client still holds (a batch it kept from the last stream) a new, empty
   * file, so the next stream starts with every slot free; the kept batch stays in the old file,
   * which lives as long as the client's mapping of it. The new names go once the client maps them (`unlink`).
   */
  renewHeld(): void {
    for (const s of this.slots) {
      if (!s.held) continue;
      const path = `${this.stem}-r${++this.renewed}`;
      let fd: number;
      try {
        fd = openSync(path, "wx+", 0o600);
      } catch (err) {
        throw this.unavailable(err);
      }
      closeSync(s.fd);
      Object.assign(s, { path, fd, capacity: 0, held: false, lent: false, memory: undefined });
      this.linked = true;
    }
  }

  /** Whether the next stream may take the ring: open, `count` slots under `dir`, none still lent to a stopped stream. */
  fits(dir: string, count: number): boolean {
    return !this.closed && this.dir === dir && this.slots.length === count && this.lentCount === 0;
  }

  close(): void {
    this.closed = true;
    for (const s of this.slots) s.onRelease = undefined;
    // Whoever waits for a slot learns that none will come, and stops.
    for (const w of this.waiters.splice(0)) w(-1);
    this.poke();
    this.unlink();
    for (const s of this.slots) {
      try {
        closeSync(s.fd);
      } catch {
        // Closed already.
      }
    }
  }
}
