import { compareKeys } from "./entry.js";
import { directoryParts } from "./directory.js";
import { PAGE_TARGET, pageOf, pageParts } from "./generation.js";
import type { TableHeadV1, TablePageRefV1 } from "../schema/index.js";

/** Directory pages one generation rewrites at most (a spread generation takes those first in key order). */
export const MAX_DIRECTORIES_PER_GENERATION = 16;
/** What chooseChanges needs at least to take one change: a page and its pins read, three pages written with their pins, an entry get. */
const ONE_CHANGE = 9;

/**
 * Which directory pages of `head` one generation works in, and the subrequests reserved for
 * them (each read, and rewritten as DIRECTORY_MAX allows however many pages the rest of the
 * budget could add): from a format-2 head, those of the listed keys in key order, at most
 * MAX_DIRECTORIES_PER_GENERATION and while the page work expected of those taken (their keys
 * on distinct pages) and one change more still fit (the first always, and one past that
 * expectation, for keys that cluster), so a spread generation reads at most one directory page
 * whose changes it does not reach;
 * from a format-1 head none to read, and the directory pages every page is cut into once;
 * in a new table the directory pages of the pages the budget could write.
 *
 * @example
 * directoriesInReach(head, keys, 394, 256); // { directories: [39], keys: [...], reserved: 4 }
 */
export function directoriesInReach(
  head: TableHeadV1 | undefined,
  keys: readonly string[],
  budget: number,
  directoryTarget: number,
): { directories: number[]; keys: string[]; reserved: number } {
  // Each page written costs at least two puts (the page and its pins).
  const newPages = Math.ceil(budget / 2);
  if (head === undefined || (head.version === 2 && head.directories.length === 0))
    return { directories: [], keys: [...keys], reserved: directoryParts(newPages, true, directoryTarget) };
  if (head.version === 1)
    return {
      directories: [],
      keys: [...keys],
      reserved: directoryParts(head.pages.length + newPages, true, directoryTarget),
    };
  const dirs = head.directories;
  const byDir = new Map<number, string[]>();
  for (const key of keys) {
    const d = pageOf(dirs, key);
    const here = byDir.get(d);
    if (here) here.push(key);
    else byDir.set(d, [key]);
  }
  const taken: number[] = [];
  let reserved = 0;
  // The page work the directory pages taken so far are expected to need: their keys on distinct
  // pages (spread changes) at a page and its pins read and written each, as far as they have pages.
  let expected = 0;
  // One directory page past that expectation is taken still: keys that cluster several to a page
  // (a sweep resumed near a directory page's end) leave budget, and without it the generation
  // would stop at the directory page's end.
  let past = false;
  for (const d of [...byDir.keys()].sort((a, b) => a - b)) {
    const cost = 1 + directoryParts(dirs[d]!.pages + newPages, false, directoryTarget);
    // The first is always taken: a generation that takes nothing would never end.
    if (taken.length > 0) {
      if (taken.length === MAX_DIRECTORIES_PER_GENERATION || reserved + cost + ONE_CHANGE > budget) break;
      if (reserved + cost + expected + ONE_CHANGE > budget) {
        if (past) break;
        past = true;
      }
    }
    taken.push(d);
    reserved += cost;
    expected += 4 * Math.min(byDir.get(d)!.length, dirs[d]!.pages);
  }
  return { directories: taken, keys: taken.flatMap((d) => byDir.get(d)!), reserved };
}

/** A pending change as the publisher lists it: its key, and whether its entry must be read (its mark does not carry it). */
export interface PendingChange {
  readonly key: string;
  readonly read: boolean;
}

/**
 * The pending changes one generation takes within `budget` subrequests of page work. Changes
 * are grouped by the page of `previous` their key falls in and taken page by page in key
 * order, each page costing its read (none in a new table), the pages it is stored as (counted
 * as if every change were an insert, so never under the real number) and a get per change whose
 * entry its mark does not carry. Taking stops at the first change that would pass the budget,
 * so at most one page is taken in part; the rest wait for the next generation. However spread
 * the changes, a generation touches at most `budget` pages. `pinsApart`: the pages written keep
 * their etags as pins apart (two objects each), and a page read whose head names pins reads them too.
 *
 * @example
 * chooseChanges(head.pages, [{ key: "g/a.mp4", read: false }], 400); // { keys: ["g/a.mp4"], subrequests: 2 }
 */
export function chooseChanges(
  previous: readonly TablePageRefV1[],
  pending: readonly PendingChange[],
  budget: number,
  pageTarget = PAGE_TARGET,
  pinsApart = false,
): { keys: string[]; subrequests: number } {
  const objects = pinsApart ? 2 : 1;
  const fresh = previous.length === 0;
  const byPage = new Map<number, PendingChange[]>();
  for (const change of pending) {
    const p = fresh ? 0 : pageOf(previous, change.key);
    const here = byPage.get(p);
    if (here) here.push(change);
    else byPage.set(p, [change]);
  }
  const keys: string[] = [];
  let spent = 0;
  for (const p of [...byPage.keys()].sort((a, b) => a - b)) {
    const changes = byPage.get(p)!.sort((a, b) => compareKeys(a.key, b.key));
    const count = fresh ? 0 : previous[p]!.count;
    const read = fresh ? 0 : previous[p]!.pins === undefined ? 1 : 2;
    let gets = 0;
    let page = 0;
    for (let k = 0; k < changes.length; k++) {
      const get = changes[k]!.read ? 1 : 0;
      const cost = read + objects * pageParts(count + k + 1, fresh, pageTarget) + gets + get;
      if (spent + cost > budget) return { keys, subrequests: spent + page };
      gets += get;
      page = cost;
      keys.push(changes[k]!.key);
    }
    spent += page;
  }
  return { keys, subrequests: spent };
}
