/**
 * The pipeline's batch memory in the engine: free ring slots first, so a batch whose clips are
 * decoded in order lies in the memory the client maps and is handed over without a copy; heap
 * memory (the plain BatchPool) when no slot can be lent. Not thread-safe; one stream owns it.
 */
import { BatchPool } from "../pipeline/batch-pool.js";
import type { SlotRing } from "./slot-ring.js";

/**
 * Slots never lent: the one whose batch the client is using while it asks for the next, and one
 * for a batch that must be copied (clips out of slot order) while the lent ones wait for theirs.
 */
const RESERVE = 2;

export class SlotPool extends BatchPool {
  /** The stream of the ring this pool serves: once the ring serves the next one, this pool lends no more. */
  private readonly epoch: number;

  constructor(
    private readonly ring: SlotRing,
    maxFree: number,
  ) {
    super(maxFree);
    this.epoch = ring.epoch;
  }

  override reserve(): boolean {
    return this.ring.epoch === this.epoch && this.ring.reserve(RESERVE);
  }

  override unreserve(): void {
    if (this.ring.epoch === this.epoch) this.ring.unreserve();
  }

  override take(bytes: number, reserved = false): ArrayBuffer {
    const lent = this.ring.epoch === this.epoch ? this.ring.lend(bytes, RESERVE, reserved) : undefined;
    if (!lent) return super.take(bytes);
    this.taken++;
    return lent;
  }

  override give(buffer: ArrayBuffer): void {
    if (!this.ring.give(buffer)) super.give(buffer);
  }
}
