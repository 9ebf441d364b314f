/**
 * The publish queue's work for N objects whose keys arrive spread at random at a given rate
 * (Cloudflare Queues' 5,000 messages a second per queue at most), simulated generation by
 * generation with the publisher's rules: up to 10 list calls of 1000 pending marks, taken whole
 * pages in key order within the generation's subrequests, the next generation at once while more
 * wait (otherwise after the index queue's 10 s debounce). Two policies: "first", every generation
 * lists from the first key (the publisher before the sweep), and "sweep", each lists after the
 * last mark the one before settled and wraps at the end (edge/table/publish.ts now). Pages are
 * those of the final table (N / 1000 key ranges) from the start, so a young table is charged
 * more pages than it has: the same for both policies. A generation costs the CPU the bench
 * measured per page rewritten and per change, and 25 ms per sequential R2 round trip. With
 * `table`, the arrivals fall into a table of that many objects already published (full pages).
 */
import { seededRng } from "../sdk/sampler/rng.js";

export interface GenerationCost {
  /** CPU of a generation besides its pages and changes (the head, parsing, signing), ms. */
  readonly fixedMs: number;
  /** CPU per page read, merged and rewritten (with its pins), ms. */
  readonly pageMs: number;
  /** CPU per change taken, ms. */
  readonly changeMs: number;
}

export interface ArrivalRun {
  readonly policy: "first" | "sweep";
  readonly objects: number;
  readonly generations: number;
  /** Seconds the publisher's invocations ran, CPU and R2 round trips: the queue work. */
  readonly work_s: number;
  /** Seconds from the first arrival to a head naming every object. */
  readonly done_s: number;
  readonly arrivals_s: number;
  /** Changes taken per page rewritten, over the run. */
  readonly changes_per_page: number;
  /** The most pages one generation rewrote, and the most subrequests it made. */
  readonly max_pages: number;
  readonly max_subrequests: number;
}

const PAGE = 1000;
const LIST = 1000;
const DIRECTORY = 256;
const DEBOUNCE_S = 10;

/** The publisher's limits the simulation follows (edge/table/publish.ts; not imported: edge/ builds against the Worker's types). */
export interface PublisherLimits {
  /** List calls of 1000 marks a generation. */
  readonly lists: number;
  /** Subrequests a generation. */
  readonly budget: number;
  /** Page reads in flight at once (1: one after another). */
  readonly reads: number;
  /** Changes a page rewritten below which the next generation waits the debounce rather than following at once (0: never waits). */
  readonly dense?: number;
  /**
   * Marks one list call returns (default 1000, the limit): R2 may return fewer when a list
   * includes metadata (the local R2 in workerd returns 100), and the publisher then lists on.
   */
  readonly listYield?: number;
}

/**
 * The CPU of a generation as a fit of the measured ones: fixed + per page written + per change
 * (least squares over every row; a negative term is taken as 0).
 */
export function fitCost(rows: readonly { cpu_ms: number; pages_written: number; changes: number }[]): GenerationCost {
  // Normal equations of cpu = f + p × pages + c × changes.
  const x = rows.map((r) => [1, r.pages_written, r.changes]);
  const a = [0, 1, 2].map((i) => [0, 1, 2].map((j) => x.reduce((s, v) => s + v[i]! * v[j]!, 0)));
  const b = [0, 1, 2].map((i) => x.reduce((s, v, k) => s + v[i]! * rows[k]!.cpu_ms, 0));
  // Gaussian elimination on 3 × 3.
  for (let i = 0; i < 3; i++)
    for (let k = i + 1; k < 3; k++) {
      const f = a[k]![i]! / a[i]![i]!;
      for (let j = i; j < 3; j++) a[k]![j]! -= f * a[i]![j]!;
      b[k]! -= f * b[i]!;
    }
  const sol = [0, 0, 0];
  for (let i = 2; i >= 0; i--) {
    let s = b[i]!;
    for (let j = i + 1; j < 3; j++) s -= a[i]![j]! * sol[j]!;
    sol[i] = s / a[i]![i]!;
  }
  const [fixedMs, pageMs, changeMs] = sol.map((v) => Math.max(0, v!));
  return { fixedMs: fixedMs!, pageMs: pageMs!, changeMs: changeMs! };
}

export function simulateArrivals(
  objects: number,
  rate: number,
  policy: "first" | "sweep",
  cost: GenerationCost,
  r2Ms = 25,
  limits: PublisherLimits = { lists: 10, budget: 400, reads: 1 },
  table = 0,
): ArrivalRun {
  const { lists: LISTS, budget: BUDGET } = limits;
  // `table`: objects published before the first arrival, in full pages the arrivals fall into.
  const pages = Math.max(1, Math.ceil((table > 0 ? table : objects) / PAGE));
  const pending = new Int32Array(pages);
  const stored = new Int32Array(pages).fill(table > 0 ? PAGE : 0);
  const rng = seededRng(7, objects, `arrivals-${rate}`);
  const listYield = limits.listYield ?? LIST;
  let arrived = 0;
  let waiting = 0;
  let published = 0;
  let t = 0;
  let work = 0;
  let generations = 0;
  let rewrites = 0;
  let taken = 0;
  let cursor = 0;
  let maxPages = 0;
  let maxSub = 0;
  const arrivalsS = objects / rate;
  while (published < objects) {
    const due = Math.min(objects, Math.floor(t * rate));
    for (; arrived < due; arrived++) pending[Math.floor(rng() * pages)]!++;
    waiting = arrived - published;
    if (waiting === 0) {
      // Nothing pending: the next publish message comes with the next indexed object's debounce.
      t = Math.max(t, (arrived + 1) / rate) + DEBOUNCE_S;
      continue;
    }
    // List up to LISTS × LIST marks from where the policy starts, then take whole pages in order within the budget.
    const start = policy === "sweep" ? cursor : 0;
    // Per list call one list, a delete per 1000 marks, the sweep's list to wrap, get and put, the head read and three puts.
    const toList = Math.min(waiting, LISTS * LIST);
    const fixed = Math.ceil(toList / listYield) + Math.ceil(toList / LIST) + (policy === "sweep" ? 7 : 4);
    let listed = 0;
    let spent = fixed;
    let pagesTaken = 0;
    let changes = 0;
    let reads = 0;
    const dirs = new Set<number>();
    let last = start;
    let everything = true;
    for (let i = 0; i < pages; i++) {
      const p = (start + i) % pages;
      const here = pending[p]!;
      if (here === 0) continue;
      if (listed >= LISTS * LIST) {
        everything = false;
        break;
      }
      const k = Math.min(here, LISTS * LIST - listed);
      listed += k;
      const dir = Math.floor(p / DIRECTORY);
      const dirCost = dirs.has(dir) || dirs.size >= 16 ? 0 : 4;
      if (dirs.size >= 16 && !dirs.has(dir)) {
        everything = false;
        break;
      }
      const read = stored[p]! > 0 ? 2 : 0;
      const entries = stored[p]! + k;
      const parts = entries > 2 * PAGE ? Math.ceil(entries / PAGE) : 1;
      const c = read + 2 * parts + dirCost;
      if (spent + c > BUDGET && pagesTaken > 0) {
        everything = false;
        break;
      }
      spent += c;
      dirs.add(dir);
      if (read > 0) reads++;
      pending[p]! -= k;
      stored[p]! += k;
      changes += k;
      pagesTaken++;
      last = p;
      if (k < here) {
        everything = false;
        break;
      }
    }
    cursor = everything ? 0 : (last + 1) % pages;
    published += changes;
    rewrites += pagesTaken;
    taken += changes;
    generations++;
    maxPages = Math.max(maxPages, pagesTaken);
    maxSub = Math.max(maxSub, spent);
    // Sequential round trips: the list calls, the sweep's record, the head, the directory pages,
    // each page read, the writes, the generation, the head, the keys and the deletes.
    const rounds =
      Math.ceil(Math.max(toList, 1) / listYield) +
      Math.ceil(Math.max(listed, 1) / LIST) +
      (policy === "sweep" ? 2 : 0) +
      6 +
      Math.ceil(reads / limits.reads);
    const ms = cost.fixedMs + cost.pageMs * pagesTaken + cost.changeMs * changes + rounds * r2Ms;
    work += ms / 1000;
    t += ms / 1000;
    const more = published < arrived && changes >= (limits.dense ?? 0) * pagesTaken;
    if (!more) t = Math.max(t, Math.min(objects, arrived + 1) / rate) + (published < objects ? DEBOUNCE_S : 0);
  }
  return {
    policy,
    objects,
    generations,
    work_s: Math.round(work),
    done_s: Math.round(t),
    arrivals_s: Math.round(arrivalsS),
    changes_per_page: Number((taken / Math.max(1, rewrites)).toFixed(1)),
    max_pages: maxPages,
    max_subrequests: maxSub,
  };
}
