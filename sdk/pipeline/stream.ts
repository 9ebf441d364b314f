import type { ResolvedOptions } from "../options.js";
import type { ClipRef } from "../sampler/clip-plan.js";
import type { ClipSequence } from "../sampler/rank-clips.js";
import type { DatasetListing, DatasetSource, PlannedRange } from "../source/source.js";
import { batches, type SettledBatch } from "./batcher.js";
import { BatchPool } from "./batch-pool.js";
import { ClipSlots } from "./clip-slots.js";
import { produceClip, spanOf, type ClipOutcome, type ScheduledClip } from "./clip-task.js";
import type { DecodeClip, DecodeImage } from "./decode.js";
import type { IndexCache } from "./index-cache.js";
import { Limiter } from "../../common/limiter.js";
import { GopDecoder, type OpenRunDecoder } from "./gop-decode.js";
import { orderedMap } from "./ordered-map.js";
import { GOP_INTERLEAVE } from "../sampler/shuffle.js";

/** GOP runs decoding at once: the runs the shuffle interleaves, and as many again for stragglers. */
const GOP_RUNS = 2 * GOP_INTERLEAVE;

export interface StreamInput {
  readonly source: DatasetSource;
  readonly listing: DatasetListing;
  readonly indexes: IndexCache;
  readonly decode: DecodeClip;
  readonly decodeImage: DecodeImage;
  readonly options: ResolvedOptions;
  /** This rank's clips, in epoch order (an array, or a sequence that computes them as they are reached). */
  readonly clips: ClipSequence<ScheduledClip>;
  readonly onNeeded: (bytes: number) => void;
  /** Frames the decoder produced, dropped ones included. */
  readonly onDecoded: (frames: number) => void;
  /** Decoders that continue a GOP run across clips; absent: every clip decodes from its keyframe. */
  readonly openRun?: OpenRunDecoder;
  readonly onSkip: (o: Extract<ClipOutcome, { kind: "skip" }>) => void;
}

/**
 * The pipeline: plan hints → fetch → packets → decode → labels/filter → batch (images: the
 * whole object → decodeImage; .npy: the data bytes, no decode). At most
 * `prefetch` clips are in flight ahead of the consumer and `workers` decode at once; nothing
 * runs while the consumer does not pull. Video clips of one GOP share one decode (GopDecoder),
 * at most GOP_RUNS decoders open at once.
 *
 * @example
 * for await (const { batch } of streamBatches(input)) train(batch.frames);
 */
export async function* streamBatches(input: StreamInput): AsyncGenerator<SettledBatch> {
  const { options: o } = input;
  const decodeSlots = new Limiter(o.workers);
  const gops = input.openRun
    ? new GopDecoder(input.openRun, decodeSlots, GOP_RUNS, (frames, bytes) => {
        input.onDecoded(frames);
        input.onNeeded(bytes);
      })
    : undefined;
  const ctx = { ...input, decodeSlots, ...(gops ? { gops } : {}) };
  const hints = new PlanHints(input, o.prefetch, o.prefetch * 4);
  // Released batches' memory is reused: the consumer's batch and the one it asks for next, plus
  // the prefetched ones (slot groups being decoded into, and stacked batches).
  const pool = new BatchPool(3 + 2 * Math.ceil(o.prefetch / o.batch));
  // Clips are decoded into their places in batch buffers (whole batches then need no copy).
  const slots = new ClipSlots(pool, o.batch, input.clips.length);
  const scheduled = (function* () {
    for (let i = 0; i < input.clips.length; i++) {
      hints.ahead(i);
      yield { clip: input.clips.at(i)!, ticket: slots.ticket(i) };
    }
  })();
  const outcomes = orderedMap(scheduled, o.prefetch, (s) => produceClip(ctx, s.clip, s.ticket));
  try {
    yield* batches(outcomes, o.batch, o.dropLast, input.onSkip, pool);
  } finally {
    pool.close();
    await gops?.close();
  }
}

/** Tells the source (and so the cache) the byte ranges of the next clips before they are read. */
class PlanHints {
  private hinted = 0;
  /** The last plan handed to the source: hints resolve spans concurrently but are delivered in order. */
  private delivered: Promise<void> = Promise.resolve();
  constructor(
    private readonly input: StreamInput,
    private readonly inFlight: number,
    private readonly chunk: number,
  ) {}

  ahead(i: number): void {
    if (i + this.chunk / 2 < this.hinted || this.hinted >= this.input.clips.length) return;
    const to = Math.min(this.input.clips.length, i + this.chunk);
    this.hinted = to;
    // A plan replaces the cache's previous one, so it restates the whole window from the oldest
    // clip that may still be unread: up to `inFlight` clips run ahead of the consumer.
    // Delivered in order, or a slow older window could land last and drop the newer clips.
    const refs: ClipRef[] = [];
    for (let j = Math.max(0, i - this.inFlight + 1); j < to; j++) refs.push(this.input.clips.at(j)!.ref);
    const ranges = this.rangesOf(refs);
    this.delivered = Promise.all([ranges, this.delivered]).then(([r]) => {
      try {
        if (r.length > 0) this.input.source.plan(r);
      } catch {
        // A hint after the consumer stopped (the source closed) is dropped, never an unhandled rejection.
      }
    });
  }

  private async rangesOf(refs: readonly ClipRef[]): Promise<PlannedRange[]> {
    const ranges: PlannedRange[] = [];
    for (const ref of refs) {
      try {
        const object = this.input.listing.objects.at(ref.object)!;
        // An image is read whole.
        if ((await this.input.indexes.get(ref.object, object)).index.kind === "image") {
          ranges.push({ object, offset: 0, length: object.size });
          continue;
        }
        const { span } = await spanOf(this.input, ref);
        ranges.push({ object, offset: span.offset, length: span.length });
      } catch {
        // A clip without a span fails (and is reported) when it is produced; a hint just skips it.
      }
    }
    return ranges;
  }
}
