import type { ClipInfo } from "../clip-info.js";
import { SdkError, SdkErrorCode } from "../errors.js";
import type { BatchPool } from "./batch-pool.js";
import { batchLayout, layoutOf, stackClips, tensorOver, type BatchLayout, type Tensor } from "../tensor.js";
import type { ClipOutcome } from "./clip-context.js";
import type { DecodedClip } from "./decode.js";

/** What the consumer gets per step. */
export interface Batch {
  /** [B, T, H, W, 3] for rgb24; [B, T, bytesPerFrame] for native; images: [B, H, W, 3] / [B, bytesPerImage]. */
  readonly frames: Tensor;
  readonly clips: readonly ClipInfo[];
  /** The clips' decoded frames as they came from the decoder (e.g. for per-frame checks). */
  readonly decoded: readonly DecodedClip[];
  /** Shape, dtype and frames of `frames` before they are stacked: a consumer that places the bytes itself skips the copy. */
  readonly layout: BatchLayout;
  /**
   * Says the consumer is done with this batch: the memory of `frames` (and of `decoded`'s
   * frames) goes back to the stream's pool and later clips are decoded into it. Views of it
   * taken before must not be used after; `frames` read after throws ERR_BATCH_RELEASED. A batch
   * never released is never overwritten.
   */
  release(): void;
}

/** A batch plus every epoch position it settles (its clips and the skips before them); at the end, maybe skips alone. */
export interface SettledBatch {
  readonly batch: Batch | undefined;
  readonly settles: readonly number[];
}

/**
 * Groups clip outcomes into batches of `size`. A clip whose frame layout differs from the
 * batch so far (videos or images of different sizes without `size`, an image after a clip)
 * closes the batch early.
 *
 * @example
 * for await (const { batch } of batches(outcomes, 8, false, report)) train(batch);
 */
export async function* batches(
  outcomes: AsyncIterable<ClipOutcome>,
  size: number,
  dropLast: boolean,
  onSkip: (o: Extract<ClipOutcome, { kind: "skip" }>) => void,
  pool?: BatchPool,
): AsyncGenerator<SettledBatch> {
  let clips: Extract<ClipOutcome, { kind: "clip" }>[] = [];
  let settles: number[] = [];
  const flush = (): SettledBatch => {
    const decoded = clips.map((c) => c.decoded);
    const slots = clips.flatMap((c) => (c.slot ? [c.slot] : []));
    const layout = batchLayout(decoded);
    // Decoded straight into one buffer, in batch order (the clips' slots): the tensor is a view of it.
    const placed = slots.length === clips.length ? placedView(layout, slots[0]!.buffer) : undefined;
    let frames: Tensor | undefined;
    let stacked = false;
    let released = false;
    // Stacked on first use: a consumer that writes the frames elsewhere (shared memory) never pays the copy.
    const batch: Batch = {
      get frames() {
        if (released)
          throw new SdkError(
            SdkErrorCode.BatchReleased,
            "Expected a batch not yet released but received one after batch.release()",
          );
        if (frames) return frames;
        stacked = !placed;
        frames = placed ? tensorOver(placed, layout) : stackClips(decoded, layout, pool?.take(layout.byteLength));
        return frames;
      },
      clips: clips.map((c) => c.info),
      decoded,
      layout,
      release() {
        if (released) return;
        released = true;
        if (frames && stacked && pool) pool.give(frames.data.buffer as ArrayBuffer);
        frames = undefined;
        for (const s of slots) s.settle();
        for (const d of decoded) for (const g of d.holds ?? []) g.release();
      },
    };
    const out = { batch, settles };
    clips = [];
    settles = [];
    return out;
  };
  for await (const o of outcomes) {
    if (o.kind === "skip") {
      o.slot?.settle();
      onSkip(o);
      settles.push(o.position);
      continue;
    }
    if (clips.length > 0 && layoutOf(clips[0]!.decoded) !== layoutOf(o.decoded)) {
      yield flush();
    }
    clips.push(o);
    settles.push(o.position);
    if (clips.length === size) yield flush();
  }
  if (clips.length > 0 && !dropLast) yield flush();
  // Skips after the last batch are consumed too once the stream ends.
  else if (settles.length > 0 && clips.length === 0) yield { batch: undefined, settles };
}

/** The batch's bytes when its frames already lie back to back, in order, in slot memory `buffer`; else undefined. */
function placedView(layout: BatchLayout, buffer: ArrayBuffer | undefined): Uint8Array<ArrayBuffer> | undefined {
  const first = layout.frames[0];
  if (!first || first.buffer !== buffer) return undefined;
  let at = first.byteOffset;
  for (const f of layout.frames) {
    if (f.buffer !== first.buffer || f.byteOffset !== at) return undefined;
    at += f.byteLength;
  }
  return new Uint8Array(buffer, first.byteOffset, layout.byteLength);
}
