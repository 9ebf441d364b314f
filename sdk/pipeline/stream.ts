import type { ResolvedOptions } from "../options.js";
import type { ClipRef } from "../sampler/clip-plan.js";
import { readyAt, type ClipSequence } from "../sampler/rank-clips.js";
import { type DatasetListing, type DatasetSource, objectOf, type PlannedRange } from "../source/source.js";
import { batches, type SettledBatch } from "./batcher.js";
import { BatchPool } from "./batch-pool.js";
import { ClipSlots } from "./clip-slots.js";
import { FrameBytes } from "./frame-bytes.js";
import type { ClipOutcome, ScheduledClip } from "./clip-context.js";
import { plannedSpanOf } from "./clip-span.js";
import { produceClip } from "./clip-task.js";
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
  /** Where batch memory comes from (the engine lends its shared-memory slots); default: a BatchPool. */
  readonly batchPool?: BatchPoolFactory;
}

/** A BatchPool (or one that lends other memory first) keeping at most `maxFree` released buffers. */
export type BatchPoolFactory = (maxFree: number) => BatchPool;

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
  const ctx = { ...input, decodeSlots, frameBytes: new FrameBytes(), ...(gops ? { gops } : {}) };
  const hints = new PlanHints(input, o.prefetch, o.prefetch * 4);
  // Released batches' memory is reused: the consumer's batch and the one it asks for next, plus
  // the prefetched ones (slot groups being decoded into, and stacked batches).
  const maxFree = 3 + 2 * Math.ceil(o.prefetch / o.batch);
  const pool = input.batchPool?.(maxFree) ?? new BatchPool(maxFree);
  // Clips are decoded into their places in batch buffers (whole batches then need no copy).
  const slots = new ClipSlots(pool, o.batch, input.clips.length);
  const scheduled = (function* () {
    for (let i = 0; i < input.clips.length; i++) {
      const planned = hints.ahead(i);
      yield { index: i, ticket: slots.ticket(i), planned };
    }
  })();
  // A clip is read once the plan that first held it reached the source (at once, but for the first
  // window): read before, it misses the cache's prefetch and the local plane's batched locate.
  // Its place in the order is awaited first: the table pages it comes from may still be read.
  const outcomes = orderedMap(scheduled, o.prefetch, async (s) => {
    await s.planned;
    const clip = await readyAt(input.clips, s.index);
    // An order of unknown length ended before this clip: the stream ends here.
    if (!clip) return undefined;
    const out = await produceClip(ctx, clip, s.ticket);
    if (out.kind === "skip") {
      // Known now, before the clips after it take their slots: they move up one place.
      slots.skipped(s.index);
      out.slot?.settle();
    }
    return out;
  });
  try {
    yield* batches(delivered(outcomes, slots), o.batch, o.dropLast, input.onSkip, pool);
  } finally {
    slots.close();
    pool.close();
    await gops?.close();
  }
}

/**
 * The outcomes in order, telling the slots how many clips are delivered (their groups take no
 * more), up to the first clip past the end of an order of unknown length.
 */
async function* delivered(
  outcomes: AsyncIterable<ClipOutcome | undefined>,
  slots: ClipSlots,
): AsyncGenerator<ClipOutcome> {
  let count = 0;
  for await (const o of outcomes) {
    if (!o) return;
    if (o.kind === "clip") slots.delivered(++count);
    yield o;
  }
}

/** Tells the source (and so the cache) the byte ranges of the next clips before they are read. */
class PlanHints {
  private hinted = 0;
  /** The last plan handed to the source: hints resolve spans concurrently but are delivered in order. */
  private delivered: Promise<void> = Promise.resolve();
  /** The plans not yet passed by: each first holds the clips up to `to` (from the previous one's). */
  private readonly windows: { readonly to: number; readonly delivered: Promise<void> }[] = [];
  /** The range of each clip of the last window, by clip: a restatement reuses them instead of resolving each again. */
  private ranges = new Map<number, Promise<PlannedRange | undefined>>();
  constructor(
    private readonly input: StreamInput,
    private readonly inFlight: number,
    private readonly chunk: number,
  ) {}

  /** Plans the window ahead of clip `i` when due; settles once the plan that first held clip `i` reached the source. */
  ahead(i: number): Promise<void> {
    this.hint(i);
    while (this.windows.length > 0 && this.windows[0]!.to <= i) this.windows.shift();
    return this.windows[0]?.delivered ?? Promise.resolve();
  }

  private hint(i: number): void {
    if (i + this.chunk / 2 < this.hinted || this.hinted >= this.input.clips.length) return;
    const to = Math.min(this.input.clips.length, i + this.chunk);
    // The first window goes out twice: its first clips' part, which waits only for the indexes
    // those clips need anyway, then the whole, so the first reads do not wait for every index.
    if (this.hinted === 0 && this.inFlight < to) this.send(i, this.inFlight);
    this.send(i, to);
  }

  private send(i: number, to: number): void {
    this.hinted = to;
    // A plan replaces the cache's previous one, so it restates the whole window from the oldest
    // clip that may still be unread: up to `inFlight` clips run ahead of the consumer.
    // Delivered in order, or a slow older window could land last and drop the newer clips.
    const ranges = this.rangesOf(Math.max(0, i - this.inFlight + 1), to);
    this.delivered = Promise.all([ranges, this.delivered]).then(([r]) => {
      try {
        if (r.length > 0) this.input.source.plan(r);
      } catch {
        // A hint after the consumer stopped (the source closed) is dropped, never an unhandled rejection.
      }
    });
    this.windows.push({ to, delivered: this.delivered });
  }

  /**
   * The ranges of clips [from, to), their indexes awaited together: one at a time, the first
   * window would reach the source only after every index of it had come, one round trip each,
   * while the first clips are read already (and their reads miss the plan: no prefetch, no
   * batched locate). A clip still in the window keeps the range the previous window resolved.
   */
  private async rangesOf(from: number, to: number): Promise<PlannedRange[]> {
    const kept = this.ranges;
    this.ranges = new Map();
    for (let j = from; j < to; j++) this.ranges.set(j, kept.get(j) ?? this.rangeOf(j));
    const ranges = await Promise.all(this.ranges.values());
    return ranges.filter((r) => r !== undefined);
  }

  private async rangeOf(j: number): Promise<PlannedRange | undefined> {
    try {
      const ref: ClipRef = (await readyAt(this.input.clips, j))!.ref;
      const object = (await objectOf(this.input.listing.objects, ref.object))!;
      // An image is read whole.
      if ((await this.input.indexes.get(ref.object, object)).index.kind === "image")
        return { object, offset: 0, length: object.size };
      // The bytes its decode reads (a GOP run reads a little past the clip): what the cache then prefetches and locates.
      return { object, ...(await plannedSpanOf(this.input, ref, this.input.openRun !== undefined)) };
    } catch {
      // A clip without a span fails (and is reported) when it is produced; a hint just skips it,
      // and the next window asks again (an index fetch that failed may succeed then).
      this.ranges.delete(j);
      return undefined;
    }
  }
}
