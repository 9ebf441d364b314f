import { tableKeys, tablePrefix } from "../../common/dataset-table/table-keys.js";
import { envInt } from "../manifest/build-manifest.js";
import { readHead } from "./publish.js";

/**
 * Which generations stay readable: the newest `generations` (never fewer than one: the latest
 * is what clients plan from), and every one younger than `seconds`, so a checkpoint of that
 * age resumes from the generation it pins.
 */
export interface Retention {
  readonly generations: number;
  readonly seconds: number;
}

/** Generations dropped per run: each costs two head reads and two deletes, far inside an invocation's subrequests. */
export const MAX_DROPS_PER_RUN = 50;

/** What R2's batched delete takes at once. */
const DELETE_BATCH = 1000;

/** The retention the deployment sets (EC_TABLE_KEEP_GENERATIONS, EC_TABLE_KEEP_SECONDS). */
export function retentionOf(env: Env): Retention {
  return {
    generations: envInt(env.EC_TABLE_KEEP_GENERATIONS, 16),
    seconds: envInt(env.EC_TABLE_KEEP_SECONDS, 7 * 86_400),
  };
}

/** Where the collector records the oldest generation still stored: generations are dropped oldest first, so those stored are one run. */
const oldestKey = (root: string) => `${tablePrefix(root)}gc.json`;

/**
 * Drops `root`'s generations that the retention no longer keeps, oldest first, and the pages
 * that only they referenced. A page is written by one generation and referenced by a run of
 * the following ones until a change rewrites it, so the pages that die with generation g are
 * those of g that g + 1 no longer lists. Runs after each publish, on the publish queue (one
 * writer per table), so no generation is written meanwhile. A run stopped half-way leaves
 * nothing unreadable: a generation's pages are deleted before its head, its head before the
 * record of the oldest.
 *
 * @example
 * await collectTable(env, "gameplay", { generations: 16, seconds: 604800 }); // { dropped: [1, 2], pages: 3 }
 */
export async function collectTable(
  env: Env,
  root: string,
  keep: Retention,
  now = Math.floor(Date.now() / 1000),
): Promise<{ dropped: number[]; pages: number }> {
  const latest = await readHead(env, root);
  const dropped: number[] = [];
  let pages = 0;
  if (!latest) return { dropped, pages };
  const recorded = await env.BUCKET.get(oldestKey(root));
  const from = recorded ? Number((await recorded.json<{ oldest: number }>()).oldest) : 1;
  let g = from;
  const last = latest.head.generation - Math.max(1, keep.generations);
  for (; g <= last && dropped.length < MAX_DROPS_PER_RUN; g++) {
    const here = await readHead(env, root, g);
    // Gone already (a run stopped after deleting it): its pages went first.
    if (!here) continue;
    if (here.head.createdAt > now - keep.seconds) break;
    const next = g + 1 === latest.head.generation ? latest : await readHead(env, root, g + 1);
    // Without the next generation the pages still referenced are unknown: delete nothing.
    if (!next) break;
    const live = new Set(next.head.pages.map((p) => p.name));
    const gone = here.head.pages.filter((p) => !live.has(p.name));
    // A page's pins (format 3) go with it.
    const dead = gone.flatMap((p) => [
      tableKeys.page(root, p.name),
      ...(p.pins === undefined ? [] : [tableKeys.pins(root, p.name)]),
    ]);
    for (let i = 0; i < dead.length; i += DELETE_BATCH) await env.BUCKET.delete(dead.slice(i, i + DELETE_BATCH));
    await env.BUCKET.delete(tableKeys.generation(root, g));
    dropped.push(g);
    pages += gone.length;
  }
  if (g !== from)
    await env.BUCKET.put(oldestKey(root), JSON.stringify({ oldest: g }), {
      httpMetadata: { contentType: "application/json" },
    });
  return { dropped, pages };
}
