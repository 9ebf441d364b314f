import { compareKeys } from "./entry.js";
import { PAGE_TARGET, pageOf, pageParts } from "./generation.js";
import type { TablePageRefV1 } from "../schema/index.js";

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
