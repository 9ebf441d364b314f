/**
 * Where decoders write a clip's frames: its place in the batch tensor it is expected to join.
 * Batches are cut from the delivered clips in order, so a clip's place is its delivered
 * position p (its schedule index less the skipped and filtered-out clips known before it when
 * it takes its slot): slot p % batch of group p / batch, each group one buffer from the
 * BatchPool. A batch that is exactly one group's clips, in order, is a view of that buffer and
 * no frame was copied; otherwise the batch stacks its frames (one copy). So a skip known before
 * the clips after it start decoding costs no copy; one that comes to light later (a filter's
 * verdict, a decode error) costs the batches of the clips already decoding: they took the
 * places the skip would have shifted them from.
 *
 * A group goes back to the pool only when nothing views it any more: every delivered position
 * in it was reached (no later clip can land in it), every slot taken in it was settled (its
 * clip skipped, or the batch holding it released) and every hold on it was let go (a clip
 * whose frames lie in another clip's slot, frames a GOP run keeps for a later clip). A slot
 * stays its clip's until settled and unheld, so no later clip is written over frames still in
 * use. A batch never released keeps its group for ever, so a consumer that keeps batches never
 * sees them overwritten. Not thread-safe; one stream owns it.
 */
import type { BatchPool } from "./batch-pool.js";

/** A counted user of slot memory: while held, the memory is neither reused nor written over. */
export interface SlotHold {
  hold(): void;
  release(): void;
}

/** One buffer of `batch` clip slots; counted references decide when it may be reused. */
class SlotGroup implements SlotHold {
  /** Users of the buffer (taken slots, holds) plus one while later clips may still land in it; at zero the buffer goes back to the pool. */
  private refs = 1;
  private open = true;
  /**
   * Taken when a decoder first writes into one of the group's slots (`memory()`), not when a clip
   * is scheduled: the clips `prefetch` keeps waiting for a decoder hold no batch memory, so a
   * stream touches (and the kernel zero-fills) only the buffers its decoders and consumer use.
   */
  buffer: ArrayBuffer | undefined;
  clipBytes = 0;
  /** Bytes the buffer is taken with: the group's clips (the last group may be short). */
  bytes = 0;
  /** The pool promised the buffer when the group's first slot was handed out (`BatchPool.reserve`). */
  reserved = false;

  constructor(
    private readonly pool: BatchPool,
    private readonly onEmpty: () => void,
  ) {}

  /** The group's buffer, taken from the pool now if no slot of it was written before. */
  memory(): ArrayBuffer {
    if (!this.buffer) {
      this.buffer = this.pool.take(this.bytes, this.reserved);
      this.reserved = false;
    }
    return this.buffer;
  }

  hold(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs > 0) return;
    this.onEmpty();
    if (this.buffer) this.pool.give(this.buffer);
    else if (this.reserved) this.pool.unreserve();
    this.buffer = undefined;
    this.reserved = false;
  }

  /** No later clip lands in the group: its buffer goes back once its users are done. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.release();
  }
}

/** One clip's slot: held by its clip until settled and by whatever keeps frames in it. */
class SlotRegion implements SlotHold {
  private refs = 0;

  constructor(
    private readonly group: SlotGroup,
    private readonly onFree: () => void,
  ) {}

  hold(): void {
    this.refs++;
    this.group.hold();
  }

  release(): void {
    if (--this.refs === 0) this.onFree();
    this.group.release();
  }
}

/**
 * A region a decoder may write one frame into, and what to hold while frames lie there. Reading
 * `view` takes the group's memory: read it only where a decoder is about to write there.
 */
export interface FrameTarget {
  readonly view: Uint8Array<ArrayBuffer>;
  readonly group: SlotHold;
}

/** A frame's place in its group, whose buffer is taken the first time a decoder asks for it. */
class LazyTarget implements FrameTarget {
  private made: Uint8Array<ArrayBuffer> | undefined;

  constructor(
    private readonly slots: SlotGroup,
    readonly group: SlotHold,
    private readonly at: number,
    private readonly length: number,
  ) {}

  get view(): Uint8Array<ArrayBuffer> {
    this.made ??= new Uint8Array(this.slots.memory(), this.at, this.length);
    return this.made;
  }
}

/** One clip's claim on its place: take the slot, or waive it; the first call counts, later ones do nothing. */
export interface SlotTicket {
  /**
   * The clip's regions, one per frame; undefined (decode as before) when its group was cut for
   * clips of another size, or its place is still another clip's (a skip that came to light late).
   */
  take(frames: number, frameBytes: number): ClipSlot | undefined;
  /** The clip will not use its slot (an image, a skip, a decode that writes elsewhere). */
  waive(): void;
}

/** One clip's place in its group: a region per frame. `settle()` once, when the clip is done with. */
export interface ClipSlot {
  readonly frames: readonly FrameTarget[];
  /** The group's memory if a decoder has written into it, else undefined (reading this takes none). */
  readonly buffer: ArrayBuffer | undefined;
  settle(): void;
}

/**
 * Hands out one ticket per scheduled clip, by schedule index; the stream tells it which clips
 * were skipped (`skipped`) and how far delivery has come (`delivered`).
 *
 * @example
 * const slots = new ClipSlots(pool, 8, clipCount);
 * const slot = slots.ticket(i).take(16, 224 * 224 * 3); // undefined: decode as before
 * slots.skipped(j); // clip j delivers nothing: the clips after it move up one place
 */
export class ClipSlots {
  private readonly groups = new Map<number, SlotGroup>();
  /** Schedule indices of the clips known to deliver nothing, ascending. */
  private readonly skips: number[] = [];
  /** Delivered positions whose slot is still taken or held. */
  private readonly busy = new Set<number>();
  /** Groups below this one take no more clips. */
  private closedBelow = 0;

  constructor(
    private readonly pool: BatchPool,
    private readonly batch: number,
    private readonly clips: number,
  ) {}

  ticket(index: number): SlotTicket {
    let used = false;
    return {
      take: (frames, frameBytes) => {
        if (used) return undefined;
        used = true;
        return this.take(index - this.skippedBefore(index), frames, frames * frameBytes, frameBytes);
      },
      waive: () => {
        used = true;
      },
    };
  }

  /** The clip at schedule index `index` delivers nothing (skipped or filtered out). */
  skipped(index: number): void {
    let at = this.skips.length;
    while (at > 0 && this.skips[at - 1]! > index) at--;
    this.skips.splice(at, 0, index);
  }

  /** The first `count` delivered clips are out: no later clip lands in their groups. */
  delivered(count: number): void {
    const below = Math.floor(count / this.batch);
    for (; this.closedBelow < below; this.closedBelow++) this.groups.get(this.closedBelow)?.close();
  }

  /** The stream ended: every group goes back once its users are done. */
  close(): void {
    for (const g of [...this.groups.values()]) g.close();
  }

  private skippedBefore(index: number): number {
    let n = 0;
    while (n < this.skips.length && this.skips[n]! < index) n++;
    return n;
  }

  private take(position: number, frames: number, clipBytes: number, frameBytes: number): ClipSlot | undefined {
    const g = Math.floor(position / this.batch);
    if (g < this.closedBelow || this.busy.has(position)) return undefined;
    let group = this.groups.get(g);
    if (!group) {
      group = new SlotGroup(this.pool, () => this.groups.delete(g));
      this.groups.set(g, group);
    }
    if (group.clipBytes === 0) {
      group.clipBytes = clipBytes;
      group.bytes = Math.min(this.batch, this.clips - g * this.batch) * clipBytes;
      // Spoken for now, touched when a decoder writes it: the engine counts the slot as taken.
      group.reserved = this.pool.reserve();
    }
    if (group.clipBytes !== clipBytes) return undefined;
    const region = new SlotRegion(group, () => this.busy.delete(position));
    this.busy.add(position);
    region.hold();
    const at = (position % this.batch) * clipBytes;
    const targets: FrameTarget[] = [];
    for (let t = 0; t < frames; t++) targets.push(new LazyTarget(group, region, at + t * frameBytes, frameBytes));
    let settled = false;
    return {
      frames: targets,
      get buffer() {
        return group.buffer;
      },
      settle: () => {
        if (settled) return;
        settled = true;
        region.release();
      },
    };
  }
}
