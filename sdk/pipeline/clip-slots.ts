/**
 * Where decoders write a clip's frames: its place in the batch tensor it is expected to join.
 * The clips of a stream are cut into groups of `batch` in schedule order; each group is one
 * buffer from the BatchPool, and clip i's frames go to slot i % batch of group i / batch. When a
 * batch is exactly one group's clips, in order (no skip or early close moved them), its tensor is
 * a view of that buffer and no frame was copied; otherwise the batch stacks its frames (one copy).
 *
 * A group goes back to the pool only when nothing views it any more: every one of its slots was
 * settled (its clip skipped, or the batch holding it released) and every hold on it was let go
 * (a clip whose frames lie in another clip's slot, frames a GOP run keeps for a later clip). A
 * batch never released keeps its group for ever, so a consumer that keeps batches never sees
 * them overwritten. Not thread-safe; one stream owns it.
 */
import type { BatchPool } from "./batch-pool.js";

/** One buffer of `batch` clip slots; counted references decide when it may be reused. */
export class SlotGroup {
  /** Slots not yet settled plus holds; at zero the buffer goes back to the pool. */
  private refs: number;
  /** Taken at the first slot handed out, so a group of images or skipped clips costs nothing. */
  buffer: ArrayBuffer | undefined;
  clipBytes = 0;

  constructor(
    slots: number,
    private readonly pool: BatchPool,
    private readonly onEmpty: () => void,
  ) {
    this.refs = slots;
  }

  /** One more user of the buffer (released with `release`). */
  hold(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs > 0) return;
    this.onEmpty();
    if (this.buffer) this.pool.give(this.buffer);
    this.buffer = undefined;
  }
}

/** A region a decoder may write one frame into, and the group it belongs to. */
export interface FrameTarget {
  readonly view: Uint8Array<ArrayBuffer>;
  readonly group: SlotGroup;
}

/** One clip's claim on its place: take the slot, or waive it; the first call counts, later ones do nothing. */
export interface SlotTicket {
  /** The clip's regions, one per frame; undefined when its group was cut for clips of another size (then waived). */
  take(frames: number, frameBytes: number): ClipSlot | undefined;
  /** The clip will not use its slot (an image, a skip, a decode that writes elsewhere). */
  waive(): void;
}

/** One clip's place in its group: a region per frame. `settle()` once, when the clip is done with. */
export interface ClipSlot {
  readonly frames: readonly FrameTarget[];
  settle(): void;
}

/**
 * Hands out one ticket per scheduled clip, by schedule index.
 *
 * @example
 * const slots = new ClipSlots(pool, 8, clipCount);
 * const slot = slots.ticket(i).take(16, 224 * 224 * 3); // undefined: decode as before
 */
export class ClipSlots {
  private readonly groups = new Map<number, SlotGroup>();

  constructor(
    private readonly pool: BatchPool,
    private readonly batch: number,
    private readonly clips: number,
  ) {}

  ticket(index: number): SlotTicket {
    const g = Math.floor(index / this.batch);
    let group = this.groups.get(g);
    if (!group) {
      const slots = Math.min(this.batch, this.clips - g * this.batch);
      group = new SlotGroup(slots, this.pool, () => this.groups.delete(g));
      this.groups.set(g, group);
    }
    const owner = group;
    let used = false;
    return {
      take: (frames, frameBytes) => {
        if (used) return undefined;
        used = true;
        const clipBytes = frames * frameBytes;
        if (!owner.buffer) {
          owner.clipBytes = clipBytes;
          owner.buffer = this.pool.take(Math.min(this.batch, this.clips - g * this.batch) * clipBytes);
        }
        if (owner.clipBytes !== clipBytes) {
          owner.release();
          return undefined;
        }
        const buffer = owner.buffer;
        const at = (index % this.batch) * clipBytes;
        const targets: FrameTarget[] = [];
        for (let t = 0; t < frames; t++)
          targets.push({ view: new Uint8Array(buffer, at + t * frameBytes, frameBytes), group: owner });
        let settled = false;
        return {
          frames: targets,
          settle: () => {
            if (settled) return;
            settled = true;
            owner.release();
          },
        };
      },
      waive: () => {
        if (used) return;
        used = true;
        owner.release();
      },
    };
  }
}
