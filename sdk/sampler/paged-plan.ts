/**
 * A clip plan as listing pages: the epoch order of "none" and "shard-buffer" walks pages a
 * window at a time, so it needs a page's objects only when it reaches the page. A plan made
 * from every object (ClipPlan) is a paged plan whose pages are all read; a table read lazily
 * is one whose pages are read as the order asks (LazyPlan).
 */
import type { ClipPlan, PlannedObject } from "./clip-plan.js";

/**
 * What a streamed order yields where it reaches pages not read yet: its consumer awaits
 * `until` (the pages read), then asks the order for its next item again.
 */
export class PageWait {
  constructor(readonly until: Promise<void>) {}
}

/** A page's objects by place: an array, or objects planned as they are first asked for. */
export interface PageObjects {
  readonly length: number;
  at(place: number): PlannedObject | undefined;
}

/** A shard's objects, in listing order: an array of ids, or a run of consecutive ones (IdRun). */
export type ShardObjects = Iterable<number>;

/**
 * The ids `first` … `first + count − 1`: a shard of a table page, whose objects are consecutive,
 * made without an array per shard (a page's shards are made before any of its objects is read).
 */
export class IdRun implements Iterable<number> {
  constructor(
    readonly first: number,
    readonly count: number,
  ) {}

  [Symbol.iterator](): Iterator<number> {
    let id = this.first;
    const end = this.first + this.count;
    return { next: () => (id < end ? { value: id++, done: false } : { value: undefined, done: true }) };
  }
}

/** One listing page's part of a plan, once the page is read. */
export interface PlanPage {
  /** Its shards, each a run of object ids (ids count across pages, in listing order). */
  readonly shards: readonly ShardObjects[];
}

/** A clip plan read one listing page at a time. */
export interface PagedPlan {
  readonly pageCount: number;
  /** Page `k`'s part, or undefined while it is not read. */
  page(k: number): PlanPage | undefined;
  /** Reads pages (those not read or being read); settles once each is. */
  load(pages: readonly number[]): Promise<void>;
  /** An object of a page read. */
  object(id: number): PlannedObject;
  /** The order walked past these pages' shards (a page whose clips are all released may then go). */
  pass?(pages: readonly number[]): void;
  /**
   * Starts fetching pages the order reaches next, without reading them (`load` reads them once
   * the order is there): the read-ahead. Where absent, the read-ahead `load`s them.
   */
  prefetch?(pages: readonly number[]): void;
}

/**
 * A materialised plan as a paged one: its shards grouped by `pageStarts`, every page read.
 *
 * @example
 * const order = shardBufferOrder(pagedOf(plan), { seed: 1, epoch: 0, buffer: 256 });
 */
export function pagedOf(plan: ClipPlan): PagedPlan {
  const pages: PlanPage[] = [];
  const { pageStarts } = plan;
  for (let k = 0; k + 1 < pageStarts.length; k++) {
    pages.push({ shards: plan.shards.slice(pageStarts[k]!, pageStarts[k + 1]!).map((s) => s.objects) });
  }
  return {
    pageCount: pages.length,
    page: (k) => pages[k],
    load: () => Promise.resolve(),
    object: (id) => plan.objects[id]!,
  };
}

/**
 * A plan whose pages are read as the order reaches them: `read(k)` returns page `k`'s planned
 * objects (ids from `firstIds[k]`) and its shards (runs or lists of places in the page). A page is kept
 * while the order has not walked past it or any of its clips is not `release`d (each clip the
 * order yields is released once, when done with); then it is dropped and `onEvict(k)` told.
 * With `fetch`, the read-ahead only fetches the next window's pages (`fetch(k)`, whose bytes
 * `read(k)` then takes): they are decoded and planned when the order reaches them, so the first
 * batch decodes its own window's pages only. Without it, the read-ahead reads them whole.
 *
 * @example
 * const plan = new LazyPlan(counts, async (k) => planPage(await readPage(k)), undefined, (k) => fetchPage(k));
 */
export class LazyPlan implements PagedPlan {
  /** The id of each page's first object; pageCount + 1 entries. */
  readonly firstIds: Float64Array;
  private readonly pages = new Map<number, { objects: PageObjects; part: PlanPage }>();
  private readonly reading = new Map<number, Promise<void>>();
  /** Clips of each page kept that are not released yet. */
  private readonly unreleased = new Map<number, number>();
  /** Pages kept that the order walked past. */
  private readonly passed = new Set<number>();
  /** Clips of the pages the order walked past (every page, once the order ended). */
  clipsPassed = 0;
  /** Pages asked for, in the order they were first asked (what a bench or test counts). */
  readonly asked: number[] = [];
  /** Pages fetched ahead (not read then), in the order they were fetched. */
  readonly prefetched: number[] = [];
  private readonly fetching = new Set<number>();

  constructor(
    counts: ArrayLike<number>,
    private readonly read: (
      k: number,
    ) => Promise<{ readonly objects: PageObjects; readonly shards: readonly (IdRun | readonly number[])[] }>,
    private readonly onEvict: (k: number) => void = () => {},
    private readonly fetch?: (k: number) => void,
  ) {
    this.firstIds = new Float64Array(counts.length + 1);
    for (let k = 0; k < counts.length; k++) this.firstIds[k + 1] = this.firstIds[k]! + counts[k]!;
  }

  get pageCount(): number {
    return this.firstIds.length - 1;
  }

  page(k: number): PlanPage | undefined {
    return this.pages.get(k)?.part;
  }

  load(pages: readonly number[]): Promise<void> {
    return Promise.all(pages.map((k) => this.loadOne(k))).then(() => undefined);
  }

  object(id: number): PlannedObject {
    const k = this.pageOfId(id);
    const page = this.pages.get(k);
    if (!page) throw new RangeError(`object ${id} is on page ${k}, which is not read yet`);
    return page.objects.at(id - this.firstIds[k]!)!;
  }

  prefetch(pages: readonly number[]): void {
    // Without a fetch of its own, the read-ahead reads the pages; a failure is reported where the order waits for them.
    if (!this.fetch) {
      this.load(pages).catch(() => undefined);
      return;
    }
    for (const k of pages) {
      if (this.pages.has(k) || this.reading.has(k) || this.fetching.has(k)) continue;
      this.fetching.add(k);
      this.prefetched.push(k);
      this.fetch(k);
    }
  }

  /** Pages kept now. */
  get resident(): number {
    return this.pages.size;
  }

  /** One clip of object `id`'s page is done with. */
  release(id: number): void {
    const k = this.pageOfId(id);
    const left = this.unreleased.get(k);
    if (left === undefined) return;
    this.unreleased.set(k, left - 1);
    this.dropIfDone(k);
  }

  pass(pages: readonly number[]): void {
    for (const k of pages) {
      const page = this.pages.get(k);
      if (!page || this.passed.has(k)) continue;
      // Its clips counted now that the order planned every object of it; releases before counted down from 0.
      let clips = 0;
      for (const s of page.part.shards) for (const id of s) clips += this.object(id).starts.length;
      this.unreleased.set(k, this.unreleased.get(k)! + clips);
      this.clipsPassed += clips;
      this.passed.add(k);
      this.dropIfDone(k);
    }
  }

  private dropIfDone(k: number): void {
    if (!this.passed.has(k) || this.unreleased.get(k)! > 0) return;
    this.pages.delete(k);
    this.unreleased.delete(k);
    this.passed.delete(k);
    this.onEvict(k);
  }

  /** The page holding object `id` (binary search over the first ids). */
  pageOfId(id: number): number {
    let lo = 0;
    let hi = this.pageCount - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.firstIds[mid]! <= id) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private loadOne(k: number): Promise<void> {
    if (this.pages.has(k)) return Promise.resolve();
    let reading = this.reading.get(k);
    if (!reading) {
      this.asked.push(k);
      this.fetching.delete(k);
      const first = this.firstIds[k]!;
      reading = this.read(k).then(
        ({ objects, shards }) => {
          const part = shards.map((s) =>
            s instanceof IdRun ? new IdRun(first + s.first, s.count) : s.map((j) => first + j),
          );
          this.pages.set(k, { objects, part: { shards: part } });
          // Counted when the order passes the page (`pass`): an object is planned when the order reaches it.
          this.unreleased.set(k, 0);
          this.reading.delete(k);
        },
        (err: unknown) => {
          // A failed read is asked again by the next wait on the page.
          this.reading.delete(k);
          throw err;
        },
      );
      this.reading.set(k, reading);
    }
    return reading;
  }
}
