/**
 * The engine's side of the shared-memory ring: one file per slot in a tmpfs folder, written with
 * pwritev straight from the decoded frames (the only copy between decoder and tensor), grown when
 * a batch needs more, handed out only after the client has released it. Not thread-safe; one
 * engine owns it.
 */
import { closeSync, ftruncateSync, openSync, unlinkSync, writevSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { SdkError, SdkErrorCode } from "../errors.js";
import type { DeviceBuffer, DeviceFrame } from "../../native/index.js";

/** Slot files grow in steps of this, so a batch slightly larger than the last does not resize them again. */
const GROW_STEP = 2 << 20;

interface Slot {
  readonly path: string;
  readonly fd: number;
  capacity: number;
  held: boolean;
  /** Device memory for batches that stay on the GPU (CUDA IPC), allocated on the first one. */
  gpu?: { buffer: DeviceBuffer; handle: string };
}

export class SlotRing {
  private readonly slots: Slot[];
  private readonly waiters: ((slot: number) => void)[] = [];
  private linked = true;

  /** Creates `count` empty slot files under `dir`, readable and writable by this user only. */
  constructor(dir: string, count: number) {
    const stem = join(dir, `ec-${process.pid}-${randomBytes(6).toString("hex")}`);
    this.slots = [];
    try {
      for (let i = 0; i < count; i++) {
        const path = `${stem}-${i}`;
        this.slots.push({ path, fd: openSync(path, "wx+", 0o600), capacity: 0, held: false });
      }
    } catch (err) {
      this.close();
      throw new SdkError(
        SdkErrorCode.ShmUnavailable,
        `Expected a writable folder for shared memory at ${dir} but creating a slot file failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
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
    if (!s?.held)
      throw new SdkError(SdkErrorCode.Protocol, `Expected a held slot below ${this.slots.length} but received ${slot}`);
    const next = this.waiters.shift();
    if (next) next(slot);
    else s.held = false;
  }

  /** Writes the frames back to back from the slot's start, growing the file first if they do not fit; returns its capacity. */
  write(slot: number, frames: readonly Uint8Array[], byteLength: number): number {
    const s = this.slots[slot]!;
    try {
      if (byteLength > s.capacity) {
        const capacity = Math.ceil(byteLength / GROW_STEP) * GROW_STEP;
        ftruncateSync(s.fd, capacity);
        s.capacity = capacity;
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

  close(): void {
    // Whoever waits for a slot learns that none will come, and stops.
    for (const w of this.waiters.splice(0)) w(-1);
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
