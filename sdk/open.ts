import type { ClipInfo } from "./clip-info.js";
import { relayedCode, ResumeError, SdkError, SdkErrorCode } from "./errors.js";
import { canListLazily, lazyOpen, lazyOptions, lazyTable, type LazyOpen } from "./lazy-open.js";
import { resolveOptions, type OpenOptions, type ResolvedOptions } from "./options.js";
import type { Batch } from "./pipeline/batcher.js";
import type { DecodeClip, DecodeImage } from "./pipeline/decode.js";
import type { OpenRunDecoder } from "./pipeline/gop-decode.js";
import type { NativeDecoders } from "./pipeline/native-decode.js";
import { IndexCache } from "./pipeline/index-cache.js";
import { planDataset, type SkippedObject } from "./pipeline/planner.js";
import { noClipsError } from "./pipeline/no-clips.js";
import { streamBatches, type BatchPoolFactory } from "./pipeline/stream.js";
import type { ClipPlan } from "./sampler/clip-plan.js";
import { GopRankClips } from "./sampler/gop-rank-clips.js";
import { planRuns } from "./sampler/partition.js";
import { RankClips, type ClipSequence, type RankClip } from "./sampler/rank-clips.js";
import { SkipTaken } from "./sampler/skip-taken.js";
import { epochStream, pagedStream, shuffleAlgorithm } from "./sampler/shuffle.js";
import { StreamedGopClips } from "./sampler/streamed-gop-clips.js";
import type { LazyTable } from "../common/lazy-table.js";
import type { TableCacheStats } from "../common/table-cache.js";
import { openSource } from "./source/index.js";
import type { DatasetListing, DatasetSource } from "./source/source.js";
import { PositionSet, restore, toCheckpoint, type Checkpoint } from "./state/checkpoint.js";
import { StatsRecorder, type StreamStats } from "./stats.js";

/** Replaceable parts, for tests and embedders; `open()` picks the real ones. */
export interface OpenParts {
  readonly source?: DatasetSource;
  readonly decode?: DecodeClip;
  readonly decodeImage?: DecodeImage;
  /** Decoders for GOP runs; default: native ones, unless `decode` is given (then each clip decodes on its own). */
  readonly openRun?: OpenRunDecoder | false;
  /** The memory clips are decoded into (given the pool's bound on free buffers); default: a BatchPool. */
  readonly batchPool?: BatchPoolFactory;
  /** Makes the dataset's own native decoders (closed with it) where `decode` is not given; default: nativeDecoders(). */
  readonly decoders?: () => NativeDecoders;
  /**
   * Plan from the table's pages as the epoch order reaches them where the source, the options
   * and the table allow (lazy-open.ts): open() and the first batch then read only the head, the
   * directory pages at the prefix's edges and the first windows' pages, and pages go once their
   * clips are delivered. On unless false (false: the table is read whole, the clip count known at open).
   */
  readonly lazy?: boolean;
}

/** What `open()` hands a Dataset: the listed, indexed and planned dataset and this rank's share. @internal */
export interface DatasetInit {
  readonly source: DatasetSource;
  readonly listing: DatasetListing;
  readonly indexes: IndexCache;
  /** What a checkpoint names of the plan: its fingerprint, and its clip total (Infinity where pages are read lazily). */
  readonly plan: Pick<ClipPlan, "fingerprint" | "total">;
  /** This rank's clips in delivery order, each with its position in the epoch (computed as the pipeline reaches them). */
  readonly mine: ClipSequence<RankClip>;
  /** Positions consumed so far (by the resumed run, then by this one). */
  readonly consumed: PositionSet;
  /** With a world above 1: the set this run's shares were dealt from, written into each checkpoint as `base`. */
  readonly base?: PositionSet | undefined;
  readonly skipped: readonly SkippedObject[];
  readonly decode: DecodeClip;
  readonly decodeImage: DecodeImage;
  readonly options: ResolvedOptions;
  readonly epoch: { seed: number; epoch: number };
  /** Opens the decoder runs of GOP-coherent decode; undefined: each clip decodes from its keyframe. */
  readonly openRun: OpenRunDecoder | undefined;
  /** When open() began (performance.now()), for `first_batch_s`. */
  readonly openedAt?: number;
  readonly batchPool?: BatchPoolFactory;
  /** Decoders this dataset owns (the native ones open() made for it): closed with it. */
  readonly decoders?: Pick<NativeDecoders, "close">;
  /** Planned from table pages read lazily: what the pages planned so far hold, to say why an epoch has no clip. */
  readonly lazy?: LazyOpen["planned"];
  /** What the table's cache holds and did (pages read lazily): `stats().table_cache`. */
  readonly tableCache?: () => TableCacheStats;
  /** Told the last position each delivery settles (pages read lazily go once their clips settle). */
  readonly onSettled?: (position: number) => void;
}

/** An opened dataset: iterate it for batches; `state()` checkpoints, `stats()` reports. */
export class Dataset implements AsyncIterable<Batch> {
  /** Clips this rank will deliver in this run (after resume and `limit`). */
  readonly clipCount: number;
  /** Clips in the whole epoch (all ranks). */
  readonly totalClips: number;
  /** Objects that contribute no clips (corrupt, or a kind not streamed yet). */
  readonly skipped: readonly SkippedObject[];
  readonly options: ResolvedOptions;
  private readonly source: DatasetSource;
  private readonly listing: DatasetListing;
  private readonly indexes: IndexCache;
  private readonly plan: DatasetInit["plan"];
  private readonly mine: DatasetInit["mine"];
  private readonly decode: DecodeClip;
  private readonly decodeImage: DecodeImage;
  private readonly epoch: DatasetInit["epoch"];
  private readonly openRun: OpenRunDecoder | undefined;
  private readonly batchPool: BatchPoolFactory | undefined;
  private readonly decoders: DatasetInit["decoders"];
  /** The dataset table generation planned from; undefined when planned from every object's index. */
  readonly generation: number | undefined;
  private readonly consumed: PositionSet;
  private readonly base: PositionSet | undefined;
  private readonly recorder: StatsRecorder;
  private readonly lazy: DatasetInit["lazy"];
  private readonly onSettled: DatasetInit["onSettled"];
  private started = false;

  /** @internal use `open()` */
  constructor(init: DatasetInit) {
    this.source = init.source;
    this.listing = init.listing;
    this.indexes = init.indexes;
    this.plan = init.plan;
    this.mine = init.mine;
    this.consumed = init.consumed;
    this.base = init.base;
    this.decode = init.decode;
    this.decodeImage = init.decodeImage;
    this.options = init.options;
    this.epoch = init.epoch;
    this.openRun = init.openRun;
    this.batchPool = init.batchPool;
    this.decoders = init.decoders;
    this.clipCount = init.mine.length;
    this.totalClips = init.plan.total;
    this.skipped = init.skipped;
    this.lazy = init.lazy;
    this.onSettled = init.onSettled;
    this.generation = init.listing.generation;
    this.recorder = new StatsRecorder(() => init.source.stats());
    this.recorder.openedAt = init.openedAt;
    this.recorder.tableCache = init.tableCache;
    for (const s of init.skipped) this.report(s.error, undefined);
  }

  /** Objects of a table page read lazily that contribute no clips: reported as their page is planned. @internal */
  reportSkipped(skipped: readonly SkippedObject[]): void {
    for (const s of skipped) {
      (this.skipped as SkippedObject[]).push(s);
      this.report(s.error, undefined);
    }
  }

  private report(err: SdkError, clip: { key: string; start: number } | undefined): void {
    this.recorder.error(err.code);
    this.options.onError?.(err, clip);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Batch> {
    if (this.started)
      throw new SdkError("ERR_ALREADY_ITERATED", "A Dataset iterates once; open() again (with resume) for more");
    this.started = true;
    const gen = streamBatches({
      source: this.source,
      listing: this.listing,
      indexes: this.indexes,
      decode: this.decode,
      decodeImage: this.decodeImage,
      options: this.options,
      clips: this.mine,
      onNeeded: (n) => (this.recorder.bytesNeeded += n),
      onDecoded: (n) => (this.recorder.decodedFrames += n),
      ...(this.openRun ? { openRun: this.openRun } : {}),
      ...(this.batchPool ? { batchPool: this.batchPool } : {}),
      onSkip: (s) => {
        if (s.error) this.report(s.error, { key: s.key, start: s.start });
      },
    });
    let settled = 0;
    try {
      for (;;) {
        this.recorder.waitStart();
        const next = await gen.next();
        this.recorder.waitEnd();
        if (next.done) {
          // Over pages read lazily an epoch without a clip is known only now: said, never an empty stream.
          if (settled === 0 && this.lazy && this.lazy.clips === 0 && this.consumed.count === 0)
            throw this.skipped.length > 0
              ? nothingToStream(this.skipped)
              : new SdkError(
                  SdkErrorCode.NoClips,
                  "The dataset table lists no object with a clip of the length asked for",
                );
          break;
        }
        settled += next.value.settles.length;
        const { batch, settles } = next.value;
        let last = -1;
        for (const p of settles) {
          this.consumed.add(p);
          last = Math.max(last, p);
        }
        if (last >= 0) {
          // Delivered: the deal forgets these clips, and their table pages may go.
          this.mine.forget?.(last);
          this.onSettled?.(last);
        }
        if (!batch) continue;
        this.recorder.delivered();
        this.recorder.clips += batch.clips.length;
        for (const c of batch.clips) this.recorder.frames += c.frames;
        this.recorder.bytesDelivered += batch.layout.byteLength;
        this.recorder.device = batch.decoded[0]?.device ?? this.recorder.device;
        for (const d of batch.decoded) if (d.fallback) this.recorder.fallback(d.fallback.codec);
        yield batch;
      }
    } finally {
      this.recorder.end();
      await gen.return(undefined);
      // A Dataset iterates once: its files and codecs need not stay open until close() (or a GC) comes.
      await this.decoders?.close();
      await this.source.release?.();
    }
  }

  /**
   * A JSON checkpoint of everything consumed so far (this rank plus what the resumed run had).
   * Give `open(url, { resume })` the checkpoints of every rank (or `mergeCheckpoints` of them).
   *
   * @example
   * await writeFile("ckpt.json", JSON.stringify(ds.state()));
   */
  state(): Checkpoint {
    return toCheckpoint(this.consumed, {
      fingerprint: this.plan.fingerprint,
      ...this.epoch,
      world: this.options.world,
      rank: this.options.rank,
      generation: this.listing.generation,
      base: this.base,
    });
  }

  /**
   * Counters so far: clips, frames, bytes fetched vs needed, stall ratio, cache hits, errors by code.
   *
   * @example
   * console.log(JSON.stringify(ds.stats())); // {"clips":128,"frames":2048,…,"stall_ratio":0.01,…}
   */
  stats(): StreamStats {
    return this.recorder.snapshot();
  }

  /** Releases the source (connections, in-process cache) and the decoders. */
  async close(): Promise<void> {
    await this.decoders?.close();
    await this.source.close();
  }
}

/**
 * Opens a dataset for streaming: validates options, lists the dataset (from its table where
 * the edge keeps one: no index is read before the first clip needs it; else each object's
 * index), computes this rank's clips in the epoch order (minus what `resume` says is
 * consumed). A checkpoint resumes from the table generation it was planned from.
 *
 * @example
 * const ds = await open("http://127.0.0.1:8787/v1/datasets/gameplay", { frames: 16, size: [224, 224], batch: 8 });
 * for await (const batch of ds) train(batch.frames, batch.clips);
 */
export async function open(url: string, options: OpenOptions = {}, parts: OpenParts = {}): Promise<Dataset> {
  const openedAt = performance.now();
  const o = resolveOptions(options);
  shuffleAlgorithm(o.shuffle);
  // This dataset's own decoders (a pool of its own), unless the caller gives the clip decode.
  const natives = parts.decode ? undefined : (parts.decoders?.() ?? (await nativeDecoders()));
  const decode = parts.decode ?? natives!.decode;
  const decodeImage = parts.decodeImage ?? (await defaultImageDecoder());
  const openRun = parts.openRun === false ? undefined : (parts.openRun ?? natives?.openRun);
  let source: DatasetSource | undefined;
  try {
    source = parts.source ?? (await openSource(url, o.source));
    const checkpoint = Array.isArray(o.resume) ? o.resume[0] : (o.resume as Checkpoint | undefined);
    const pinned = checkpoint?.generation;
    // A checkpoint with a clip total was planned whole: by default it resumes so (lazy: true refuses it).
    const lazy = parts.lazy ?? checkpoint?.total === undefined;
    if (lazy && lazyOptions(o) && canListLazily(source)) {
      const table = await source.listLazy({ generation: pinned });
      if (table && lazyTable(table))
        return openLazily(source, table, o, options, { decode, decodeImage, openRun, openedAt, natives, parts });
    }
    const listing = await source.list({ generation: pinned });
    if (listing.notice) notify(listing.notice);
    const indexes = new IndexCache(source, undefined, o.track);
    const { plan, skipped } = await planDataset(listing, indexes, o);
    // Nothing to stream: say why instead of an empty iterator.
    if (plan.total === 0) throw skipped.length > 0 ? nothingToStream(skipped) : await noClipsError(listing, indexes, o);
    const resumed = o.resume
      ? restore(o.resume, { fingerprint: plan.fingerprint, total: plan.total, rank: o.rank, world: o.world })
      : undefined;
    for (const k of ["seed", "epoch"] as const) {
      if (resumed && options[k] !== undefined && options[k] !== resumed[k]) {
        throw new ResumeError(
          "ERR_RESUME_MISMATCH",
          `Expected ${k} ${resumed[k]} (the checkpoint's) or none but received ${options[k]}`,
        );
      }
    }
    const epoch = resumed ? { seed: resumed.seed, epoch: resumed.epoch } : { seed: o.seed, epoch: o.epoch };
    const consumed = resumed?.set ?? new PositionSet(plan.total);
    // The shares are dealt from what the run starts from; a rank resuming alone from its own
    // checkpoint deals from that checkpoint's base, the set its earlier run dealt from.
    const dealFrom = resumed?.base ?? consumed;
    const base = o.world > 1 ? (resumed?.base ?? new PositionSet(plan.total, consumed.bits.slice())) : undefined;
    const stream = () => epochStream(plan, o.shuffle, { ...epoch, buffer: o.shuffleBuffer });
    // Several ranks and GOPs shared by clips: a GOP run's clips go to one rank, so each rank decodes
    // the GOPs it touches about once. Either way the order streams: open() and the first batch
    // compute only the positions they reach.
    const runs = o.world > 1 ? planRuns(plan) : undefined;
    const share: ClipSequence<RankClip> = runs
      ? new GopRankClips(stream, dealFrom, runs, o.rank, o.world, o.limit)
      : new RankClips(stream(), dealFrom, o.rank, o.world, o.limit);
    const mine = resumed?.base ? new SkipTaken(share, consumed, consumed.count - resumed.base.count) : share;
    return new Dataset({
      source,
      listing,
      indexes,
      plan,
      mine,
      consumed,
      base,
      skipped,
      decode,
      decodeImage,
      options: o,
      epoch,
      openRun,
      openedAt,
      ...(parts.batchPool ? { batchPool: parts.batchPool } : {}),
      ...(natives ? { decoders: natives } : {}),
    });
  } catch (err) {
    await natives?.close();
    await source?.close();
    throw err;
  }
}

/**
 * open() over a table read page by page: the lazy plan (lazy-open.ts), a position set and deal
 * of unknown length (the epoch's clip total is known once its order is walked to its end),
 * skipped objects reported as their pages are planned.
 */
async function openLazily(
  source: DatasetSource,
  table: LazyTable,
  o: ResolvedOptions,
  options: OpenOptions,
  d: {
    decode: DecodeClip;
    decodeImage: DecodeImage;
    openRun: OpenRunDecoder | undefined;
    openedAt: number;
    natives: NativeDecoders | undefined;
    parts: OpenParts;
  },
): Promise<Dataset> {
  let dataset: Dataset | undefined;
  const early: SkippedObject[] = [];
  const lazy = lazyOpen(table, o, (s) => (dataset ? dataset.reportSkipped(s) : early.push(...s)));
  const { paged, plan, listing } = lazy;
  const resumed = o.resume
    ? restore(o.resume, { fingerprint: plan.fingerprint, total: undefined, rank: o.rank, world: o.world })
    : undefined;
  for (const k of ["seed", "epoch"] as const) {
    if (resumed && options[k] !== undefined && options[k] !== resumed[k]) {
      throw new ResumeError(
        "ERR_RESUME_MISMATCH",
        `Expected ${k} ${resumed[k]} (the checkpoint's) or none but received ${options[k]}`,
      );
    }
  }
  const epoch = resumed ? { seed: resumed.seed, epoch: resumed.epoch } : { seed: o.seed, epoch: o.epoch };
  const consumed = resumed?.set ?? new PositionSet(Infinity);
  const dealFrom = resumed?.base ?? consumed;
  const base = o.world > 1 ? (resumed?.base ?? new PositionSet(Infinity, consumed.bits.slice())) : undefined;
  const params = { ...epoch, buffer: o.shuffleBuffer };
  // Each walk of the order noted, so the pages of settled clips go: memory stays bounded by the options.
  const stream = () => lazy.settled.track(pagedStream(paged, o.shuffle, params)!);
  const share: ClipSequence<RankClip> =
    o.world > 1
      ? new StreamedGopClips(stream, dealFrom, paged, o.rank, o.world, o.limit, lazy.settled)
      : new RankClips(stream(), dealFrom, o.rank, o.world, o.limit, lazy.settled);
  const mine = resumed?.base ? new SkipTaken(share, consumed, consumed.count - resumed.base.count) : share;
  dataset = new Dataset({
    source,
    listing,
    indexes: new IndexCache(source),
    plan,
    mine,
    consumed,
    base,
    skipped: early,
    decode: d.decode,
    decodeImage: d.decodeImage,
    options: o,
    epoch,
    openRun: d.openRun,
    openedAt: d.openedAt,
    lazy: lazy.planned,
    tableCache: () => table.cache.stats(),
    onSettled: (p) => lazy.settled.settled(p),
    ...(d.parts.batchPool ? { batchPool: d.parts.batchPool } : {}),
    ...(d.natives ? { decoders: d.natives } : {}),
  });
  return dataset;
}

/** The first skipped object's error, with a count of the others by code. */
function nothingToStream(skipped: readonly SkippedObject[]): SdkError {
  const first = skipped[0]!.error;
  const codes = new Map<string, number>();
  for (const s of skipped.slice(1)) codes.set(s.error.code, (codes.get(s.error.code) ?? 0) + 1);
  const others = [...codes].map(([code, n]) => `${n} ${code}`).join(", ");
  const rest = others ? `; nothing else streams either (${others})` : "";
  return new SdkError(relayedCode(first.code), `${first.message}${rest}`, { cause: first });
}

/**
 * Says something once per open() as a Node process warning (stderr, or `process.on("warning")`):
 * not through `onError`, which reports skipped clips and objects and feeds `stats().errors`.
 */
function notify(err: SdkError): void {
  process.emitWarning(err.message, { code: err.code });
}

/** Loaded on first use: a caller that gives its own decode never loads the addon. */
async function nativeDecoders(): Promise<NativeDecoders> {
  const native = await import("./pipeline/native-decode.js");
  return native.nativeDecoders();
}

async function defaultImageDecoder(): Promise<DecodeImage> {
  const { nativeDecodeImage } = await import("./pipeline/native-decode.js");
  return nativeDecodeImage;
}

export type { ClipInfo };
