/**
 * Shuffle algorithms, registered by name: each turns the clip plan into the global epoch order,
 * deterministic for (seed, epoch). Another algorithm is one `registerShuffle` call. "none" and
 * "shard-buffer" stream: the order's first clips come out after O(shards + buffer) work, not
 * after the whole epoch's order, so open() and the first batch do not grow with the epoch.
 */
import { InvalidOptionError } from "../errors.js";
import type { ClipPlan, ClipRef } from "./clip-plan.js";
import { PageWait, pagedOf, type PagedPlan, type ShardObjects } from "./paged-plan.js";
import { seededRng, shuffleInPlace, type Rng } from "./rng.js";

export interface ShuffleParams {
  readonly seed: number;
  readonly epoch: number;
  /** Units held by the bounded shuffle buffer: clips, or for "shard-buffer" GOP runs. */
  readonly buffer: number;
}

/**
 * GOP runs "shard-buffer" deals from at once: clips of one GOP land about this many clips
 * apart, and the pipeline keeps one decoder per run it serves (see GopDecoder).
 */
export const GOP_INTERLEAVE = 8;

/** The epoch order, position by position; an array is one too. Iterated once, front to back. */
export type ShuffleAlgorithm = (plan: ClipPlan, p: ShuffleParams) => Iterable<ClipRef>;

const algorithms = new Map<string, ShuffleAlgorithm>();

/**
 * Adds (or replaces) a shuffle algorithm selectable with the `shuffle` option.
 *
 * @example
 * registerShuffle("reverse", (plan, p) => epochOrder(plan, "none", p).reverse());
 */
export function registerShuffle(name: string, algorithm: ShuffleAlgorithm): void {
  algorithms.set(name, algorithm);
}

/** The names `shuffle` accepts. */
export function shuffleNames(): string[] {
  return [...algorithms.keys()];
}

/**
 * @example
 * const order = epochOrder(plan, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 });
 */
export function epochOrder(plan: ClipPlan, name: string | false, p: ShuffleParams): ClipRef[] {
  return [...epochStream(plan, name, p)];
}

/**
 * The same order as `epochOrder`, computed as it is iterated: a streaming algorithm has done
 * only the work its first positions need when they come out.
 *
 * @example
 * const first = epochStream(plan, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 })[Symbol.iterator]().next().value;
 */
export function epochStream(plan: ClipPlan, name: string | false, p: ShuffleParams): Iterable<ClipRef> {
  return shuffleAlgorithm(name)(plan, p);
}

/**
 * The registered algorithm of that name; open() asks before any I/O so a typo fails fast.
 *
 * @example
 * shuffleAlgorithm("global"); // throws ERR_INVALID_OPTION for an unknown name
 */
export function shuffleAlgorithm(name: string | false): ShuffleAlgorithm {
  const algorithm = algorithms.get(name === false ? "none" : name);
  if (!algorithm) {
    throw new InvalidOptionError(
      `Expected one of ${shuffleNames()
        .map((n) => JSON.stringify(n))
        .join(", ")} for shuffle but received ${JSON.stringify(name)}`,
    );
  }
  return algorithm;
}

function* clipsOfShards(plan: PagedPlan, shards: Iterable<ShardObjects | PageWait>): Generator<ClipRef | PageWait> {
  for (const shard of shards) {
    if (shard instanceof PageWait) {
      yield shard;
      continue;
    }
    for (const object of shard) {
      for (const start of plan.object(object).starts) yield { object, start };
    }
  }
}

/**
 * Streaming shuffle with a bounded buffer, as a loader that sees clips one by one would do it:
 * keeps reads local to a few shards at a time while mixing across them.
 */
export function bufferShuffle<T>(items: Iterable<T>, size: number, rng: Rng): T[] {
  return [...bufferShuffled(items, size, rng)];
}

/** `bufferShuffle` as it is iterated: each item out after one more item in, once the buffer is full. */
export function* bufferShuffled<T>(items: Iterable<T>, size: number, rng: Rng): Generator<T> {
  const buf: T[] = [];
  for (const item of items) {
    // A wait for pages passes through at once, drawing nothing: the order is the same read lazily or not.
    if (item instanceof PageWait) {
      yield item;
      continue;
    }
    if (buf.length < size) {
      buf.push(item);
      continue;
    }
    const j = Math.floor(rng() * size);
    yield buf[j]!;
    buf[j] = item;
  }
  shuffleInPlace(buf, rng);
  yield* buf;
}

/** The clips of each object that open with the same keyframe, in start order: one GOP decode serves them. */
function* gopRuns(plan: PagedPlan, shards: Iterable<ShardObjects | PageWait>): Generator<ClipRef[] | PageWait> {
  for (const shard of shards) {
    if (shard instanceof PageWait) {
      yield shard;
      continue;
    }
    for (const object of shard) {
      const { starts, gops } = plan.object(object);
      let run: ClipRef[] = [];
      for (let i = 0; i < starts.length; i++) {
        if (run.length > 0 && (!gops || gops[i] !== gops[i - 1])) {
          yield run;
          run = [];
        }
        run.push({ object, start: starts[i]! });
      }
      if (run.length > 0) yield run;
    }
  }
}

/**
 * Deals clips from `width` runs at once, each step from a random one, each run in its own
 * (ascending) order, a finished run replaced by the next: a run's clips come out in order,
 * interleaved with the other runs' so that one batch is not one GOP.
 */
export function interleaveRuns<T>(runs: Iterable<readonly T[]>, width: number, rng: Rng): T[] {
  return [...interleaved(runs, width, rng)] as T[];
}

/** `interleaveRuns` as it is iterated: a run is taken from `runs` when a slot frees. */
export function* interleaved<T>(
  runs: Iterable<readonly T[] | PageWait>,
  width: number,
  rng: Rng,
): Generator<T | PageWait> {
  const source = runs[Symbol.iterator]();
  // A wait for pages is yielded as it comes and the run asked for again once the consumer resumes.
  function* take(): Generator<PageWait, { run: readonly T[]; at: number } | undefined> {
    for (;;) {
      const next = source.next();
      if (next.done) return undefined;
      if (!(next.value instanceof PageWait)) return { run: next.value, at: 0 };
      yield next.value;
    }
  }
  const active: { run: readonly T[]; at: number }[] = [];
  while (active.length < width) {
    const a = yield* take();
    if (!a) break;
    active.push(a);
  }
  while (active.length > 0) {
    const j = Math.floor(rng() * active.length);
    const a = active[j]!;
    yield a.run[a.at++]!;
    if (a.at < a.run.length) continue;
    const next = yield* take();
    if (next) active[j] = next;
    else active.splice(j, 1);
  }
}

/**
 * Listing pages "shard-buffer" takes at a time: the shards of PAGE_WINDOW pages at once are
 * shuffled together, so a position of the order depends on the pages of its window (and those
 * before it), never on every page.
 */
export const PAGE_WINDOW = 4;

/**
 * Neighbouring listing pages (runs of PAGE_GROUP in listing order) whose windows "shard-buffer"
 * takes one after another: the groups are permuted, then the pages within each group, and a
 * window never crosses a group. A window and the next one (read ahead) then lie among
 * PAGE_GROUP neighbouring pages, so a lazy open's first batch reads the table's directory pages
 * of one run of pages (one, at most two), not of up to 2 × PAGE_WINDOW pages anywhere in it.
 */
export const PAGE_GROUP = 2 * PAGE_WINDOW;

/**
 * The shards of each window of pages in turn, each window's shards shuffled with `rng` (kept in
 * page order without). A window not read yet is waited for; the next one is fetched once this
 * one is read (not before, so its fetching does not delay this one's first clips) while this one
 * is consumed, and read (decoded, planned) when the order reaches it.
 */
function* windowedShards(
  plan: PagedPlan,
  windows: Iterable<readonly number[]>,
  rng?: Rng,
): Generator<ShardObjects | PageWait> {
  const it = windows[Symbol.iterator]();
  let want = it.next();
  while (!want.done) {
    while (want.value.some((k) => !plan.page(k))) yield new PageWait(plan.load(want.value));
    const shards = want.value.flatMap((k) => plan.page(k)!.shards);
    const ahead = it.next();
    // Fetched ahead, read when the order reaches it: this window's first clips wait for no other page's decoding.
    if (!ahead.done) {
      if (plan.prefetch) plan.prefetch(ahead.value);
      else plan.load(ahead.value).catch(() => undefined);
    }
    yield* rng ? shuffleInPlace(shards, rng) : shards;
    plan.pass?.(want.value);
    want = ahead;
  }
}

/** `pages` cut into windows of PAGE_WINDOW (the last may be shorter). */
function* windowsOf(pages: readonly number[]): Generator<number[]> {
  for (let w = 0; w < pages.length; w += PAGE_WINDOW) yield pages.slice(w, w + PAGE_WINDOW);
}

/** The pages in listing order, a window at a time. */
const listingWindows = (plan: PagedPlan) => windowsOf(Array.from({ length: plan.pageCount }, (_, i) => i));

/**
 * The windows of "shard-buffer": the groups of PAGE_GROUP neighbouring pages permuted with
 * `groupRng`, the pages of each group permuted with `pageRng` when the order reaches it, each
 * group cut into windows (so the order's start costs O(groups), not O(pages)).
 */
function* groupedWindows(pageCount: number, groupRng: Rng, pageRng: Rng): Generator<number[]> {
  const groups = shuffleInPlace(
    Array.from({ length: Math.ceil(pageCount / PAGE_GROUP) }, (_, g) => g),
    groupRng,
  );
  for (const g of groups) {
    const pages = Array.from(
      { length: Math.min(PAGE_GROUP, pageCount - g * PAGE_GROUP) },
      (_, i) => g * PAGE_GROUP + i,
    );
    yield* windowsOf(shuffleInPlace(pages, pageRng));
  }
}

/** An order over a paged plan; it yields a PageWait where it reaches pages not read yet. */
export type PagedShuffle = (plan: PagedPlan, p: ShuffleParams) => Iterable<ClipRef | PageWait>;

const paged = new Map<string, PagedShuffle>();

/**
 * The order of a plan read page by page, where the algorithm streams by pages ("none",
 * "shard-buffer"); undefined for one that needs every clip first ("global", registered ones).
 *
 * @example
 * const order = pagedStream(lazyPlan, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 });
 */
export function pagedStream(
  plan: PagedPlan,
  name: string | false,
  p: ShuffleParams,
): Iterable<ClipRef | PageWait> | undefined {
  return paged.get(name === false ? "none" : name)?.(plan, p);
}

function registerPaged(name: string, algorithm: PagedShuffle): void {
  paged.set(name, algorithm);
  // On a materialised plan every page is read: nothing waits.
  registerShuffle(name, (plan, p) => algorithm(pagedOf(plan), p) as Iterable<ClipRef>);
}

registerPaged("none", (plan) => clipsOfShards(plan, windowedShards(plan, listingWindows(plan))));

// Groups of neighbouring pages permuted, then the pages of each group, and their shards shuffled
// a window at a time, then GOP runs through the bounded buffer, then runs interleaved: reads stay
// local to a few shards, each GOP is decoded once, a batch mixes GOPs, and the order's first
// positions need only its first window's pages (and their run of the table's directory).
registerPaged("shard-buffer", (plan, p) => {
  const windows = groupedWindows(
    plan.pageCount,
    seededRng(p.seed, p.epoch, "page groups"),
    seededRng(p.seed, p.epoch, "pages"),
  );
  const shards = windowedShards(plan, windows, seededRng(p.seed, p.epoch, "shards"));
  const runs = bufferShuffled(gopRuns(plan, shards), p.buffer, seededRng(p.seed, p.epoch, "buffer"));
  return interleaved(runs, GOP_INTERLEAVE, seededRng(p.seed, p.epoch, "interleave"));
});

// A shuffle of every clip: its first position depends on all of them, so this one is materialised.
registerShuffle("global", (plan, p) => {
  const all = pagedOf(plan);
  const clips = [...clipsOfShards(all, windowedShards(all, listingWindows(all)))] as ClipRef[];
  return shuffleInPlace(clips, seededRng(p.seed, p.epoch, "global"));
});
