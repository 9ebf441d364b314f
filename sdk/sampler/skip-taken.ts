import type { ClipSequence, ConsumedPositions, RankClip } from "./rank-clips.js";

/**
 * A rank's share less the clips it already took: how one rank resumes alone from its own
 * checkpoint. The share is dealt from what its run started from (the checkpoint's base), so it
 * is the very share the rank was walking; the positions taken since are skipped as the pipeline
 * reaches them, and the order of the rest is the uninterrupted run's.
 *
 * @example
 * const mine = new SkipTaken(new RankClips(order, base, 1, 4), consumed, consumed.count - base.count);
 */
export class SkipTaken implements ClipSequence<RankClip> {
  /** A copy: the run adds what it consumes to the live set, and those clips are still to deliver. */
  private readonly bits: Uint8Array;
  /** The clips kept from item `keptFrom` on (those before it delivered and forgotten). */
  private kept: RankClip[] = [];
  private keptFrom = 0;
  private shareAt = 0;

  constructor(
    private readonly share: ClipSequence<RankClip>,
    taken: ConsumedPositions,
    private readonly takenCount: number,
  ) {
    this.bits = taken.bits.slice();
  }

  /** The share's length less what was taken (Infinity while the share's is). */
  get length(): number {
    return Math.max(0, this.share.length - this.takenCount);
  }

  at(i: number): RankClip | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) return undefined;
    if (i < this.keptFrom) throw new RangeError(`Clip ${i} of this rank was asked for after it was delivered`);
    while (this.keptFrom + this.kept.length <= i) if (!this.step()) return undefined;
    return this.kept[i - this.keptFrom];
  }

  forget(position: number): void {
    let n = 0;
    while (n < this.kept.length && this.kept[n]!.position <= position) n++;
    if (n > 0) {
      this.kept = this.kept.slice(n);
      this.keptFrom += n;
    }
    this.share.forget?.(position);
  }

  /** The share's items this one walks to reach item `i`, each readied in turn. */
  async ready(i: number): Promise<void> {
    if (!this.share.ready || !Number.isInteger(i) || i < 0 || i >= this.length) return;
    while (this.keptFrom + this.kept.length <= i) {
      await this.share.ready(this.shareAt);
      if (!this.step()) return;
    }
  }

  /** Takes the share's next item, kept unless the run took it already; false past the share's end. */
  private step(): boolean {
    const clip = this.share.at(this.shareAt++);
    if (!clip) return false;
    if (((this.bits[clip.position >> 3] ?? 0) & (1 << (clip.position & 7))) === 0) this.kept.push(clip);
    return true;
  }
}
