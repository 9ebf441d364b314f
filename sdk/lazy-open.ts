/**
 * The plan of a dataset whose table is read page by page (LazyTable): what open() sets up
 * instead of planning every object, where the epoch order streams by pages ("none",
 * "shard-buffer") and the table spans more than one window of pages. open() and the first
 * batch then read the head, the directory pages at the prefix's edges and the pages of the
 * order's first windows only.
 */
import { createHash } from "node:crypto";
import { type LazyTable, PAGE_IDS } from "../common/lazy-table.js";
import type { ResolvedOptions } from "./options.js";
import { planTablePage, type SkippedObject } from "./pipeline/planner.js";
import { ORDER_VERSION } from "./sampler/order-version.js";
import { LazyPlan } from "./sampler/paged-plan.js";
import { SettledPages } from "./sampler/settled-pages.js";
import { PAGE_WINDOW } from "./sampler/shuffle.js";
import type { DatasetListing } from "./source/source.js";

/** A source that can read its table lazily (the edge's). */
export interface LazyTableSource {
  listLazy(opts?: { readonly generation?: number | undefined }): Promise<LazyTable | undefined>;
}

export function canListLazily(source: object): source is LazyTableSource {
  return typeof (source as Partial<LazyTableSource>).listLazy === "function";
}

/** Whether open() takes the lazy path for these options: an order that streams by pages, the table's first track. */
export function lazyOptions(o: Pick<ResolvedOptions, "shuffle" | "track">): boolean {
  return !o.track && (o.shuffle === false || o.shuffle === "none" || o.shuffle === "shard-buffer");
}

/** Whether the table is worth reading lazily: more than one window of pages (else it is read whole, as today). */
export function lazyTable(table: LazyTable): boolean {
  return table.pageCount > PAGE_WINDOW;
}

/** The lazy plan of a table, what the Dataset keeps of a plan, and the listing the pipeline reads objects from. */
export interface LazyOpen {
  readonly paged: LazyPlan;
  readonly plan: { readonly fingerprint: string; readonly total: number };
  readonly listing: DatasetListing;
  /** Clips of the pages the order walked past so far, and how many pages were planned (every page: the epoch's clip total is known). */
  readonly planned: { clips: number; pages: number };
  /** Where this rank is done with the order's clips: the order is walked through it, settled positions told to it. */
  readonly settled: SettledPages;
}

/**
 * The lazy plan of `table`: each page planned when the order reaches it (planTablePage), its
 * objects that contribute no clips handed to `onSkipped` then. The fingerprint is the head's:
 * the sampling, the generation, the prefix and its page range, and the shard size — another
 * than the eager plan's, since pages group shards otherwise. A page goes (from the plan and the
 * table) once the order walked past it and every clip of it settled, and from the table before
 * where the table's cache passes `tableCacheBytes` (the pipeline reads it again for a clip's object).
 *
 * @example
 * const { paged, plan, listing } = lazyOpen(table, options, (s) => report(s));
 */
export function lazyOpen(
  table: LazyTable,
  o: Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align"> & Partial<Pick<ResolvedOptions, "tableCacheBytes">>,
  onSkipped: (skipped: readonly SkippedObject[]) => void,
): LazyOpen {
  const head = table.list.head;
  // Pages and directory pages held within the option: a window of pages must fit, the rest is read again on need.
  if (o.tableCacheBytes !== undefined) table.cache.limit(o.tableCacheBytes, PAGE_WINDOW);
  const counts = new Float64Array(table.pageCount).fill(PAGE_IDS);
  // Clips are counted as the order walks past each page (its objects are planned as the order reaches them).
  const planned = {
    get clips() {
      return paged.clipsPassed;
    },
    pages: 0,
  };
  const paged = new LazyPlan(
    counts,
    async (k) => {
      const { entries } = await table.page(k);
      // Places in the page (the ids' page part would make a sparse array of up to 2^20 × pages).
      const skipped: SkippedObject[] = [];
      const page = planTablePage(entries, 0, o, head.shardBytes, skipped);
      const said = skipped.filter(Boolean);
      if (said.length > 0) onSkipped(said);
      planned.pages++;
      return page;
    },
    (k) => table.evict(k),
    // The read-ahead window's pages are fetched, not checked or decoded before the order reaches them.
    (k) => table.prefetch(k),
  );
  const salt = [`order ${ORDER_VERSION}`, o.frames, o.stride, o.hop ?? null, o.align];
  const fingerprint = createHash("sha256")
    .update(
      JSON.stringify([...salt, "table pages", head.generation, table.dir, table.range, head.shardBytes, PAGE_IDS]),
    )
    .digest("hex")
    .slice(0, 32);
  return {
    paged,
    plan: { fingerprint, total: Infinity },
    listing: { objects: table.objects, shards: [], generation: head.generation },
    planned,
    settled: new SettledPages(paged),
  };
}
