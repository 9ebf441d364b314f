import { DEFAULT_RETENTION, type Retention } from "../../common/dataset-table/retention.js";
import { tableKeys, tablePrefix } from "../../common/dataset-table/table-keys.js";
import type { TableDirectoryRefV1, TableHeadV1, TablePageRefV1 } from "../../common/schema/index.js";
import { envInt } from "../manifest/build-manifest.js";
import { readDirectory, readHead } from "./publish.js";

export type { Retention };

/** Generations dropped per run: each costs two head reads and two deletes, and the directory pages it reads. */
export const MAX_DROPS_PER_RUN = 50;

/** Subrequests one run makes at most besides its record's get and put and the latest head's read. */
export const COLLECT_SUBREQUESTS = 4 * MAX_DROPS_PER_RUN;

/** What R2's batched delete takes at once. */
const DELETE_BATCH = 1000;

/** The retention the deployment sets (EC_TABLE_KEEP_GENERATIONS, EC_TABLE_KEEP_SECONDS). */
export function retentionOf(env: Env): Retention {
  return {
    generations: envInt(env.EC_TABLE_KEEP_GENERATIONS, DEFAULT_RETENTION.generations),
    seconds: envInt(env.EC_TABLE_KEEP_SECONDS, DEFAULT_RETENTION.seconds),
  };
}

/** Where the collector records the oldest generation still stored: generations are dropped oldest first, so those stored are one run. */
const oldestKey = (root: string) => `${tablePrefix(root)}gc.json`;

/** A stored object a generation names: a page (with its pins where apart) or a directory page. */
type Named = Pick<TablePageRefV1, "name" | "pins">;

/**
 * What generation g stores that g + 1 no longer names, and the directory pages read to know it.
 * Format 2 to 2: the directory pages of g that g + 1 does not name, and the pages they list that
 * the new directory pages of g + 1 do not (a page is listed once per generation, so one kept
 * from g is listed by a directory page new in g + 1). Otherwise (g of format 1): every name of g
 * against every name of g + 1.
 */
async function goneWith(
  env: Env,
  root: string,
  here: TableHeadV1,
  next: TableHeadV1,
): Promise<{ gone: Named[]; reads: number }> {
  const dirNames = (h: TableHeadV1) => new Set(h.version === 2 ? h.directories.map((d) => d.name) : []);
  const read = (dirs: readonly TableDirectoryRefV1[]) => Promise.all(dirs.map((d) => readDirectory(env, root, d)));
  if (here.version === 2 && next.version === 2) {
    const [inHere, inNext] = [dirNames(here), dirNames(next)];
    const dead = here.directories.filter((d) => !inNext.has(d.name));
    const born = next.directories.filter((d) => !inHere.has(d.name));
    const [deadPages, bornPages] = await Promise.all([read(dead), read(born)]);
    const live = new Set(bornPages.flat().map((p) => p.name));
    return { gone: [...dead, ...deadPages.flat().filter((p) => !live.has(p.name))], reads: dead.length + born.length };
  }
  const all = async (h: TableHeadV1): Promise<Named[]> =>
    h.version === 1 ? h.pages : [...h.directories, ...(await read(h.directories)).flat()];
  const [inHere, inNext] = await Promise.all([all(here), all(next)]);
  const live = new Set(inNext.map((p) => p.name));
  const reads = (here.version === 2 ? here.directories.length : 0) + (next.version === 2 ? next.directories.length : 0);
  return { gone: inHere.filter((p) => !live.has(p.name)), reads };
}

/** Directory pages goneWith reads for this pair, known from the heads alone. */
function readsOf(here: TableHeadV1, next: TableHeadV1): number {
  if (here.version === 1 || next.version === 1)
    return (here.version === 2 ? here.directories.length : 0) + (next.version === 2 ? next.directories.length : 0);
  const inHere = new Set(here.directories.map((d) => d.name));
  const inNext = new Set(next.directories.map((d) => d.name));
  return (
    here.directories.filter((d) => !inNext.has(d.name)).length +
    next.directories.filter((d) => !inHere.has(d.name)).length
  );
}

/**
 * Drops `root`'s generations that the retention no longer keeps, oldest first, and the pages
 * (and directory pages) that only they referenced. A page is written by one generation and referenced by a run of
 * the following ones until a change rewrites it, so the pages that die with generation g are
 * those of g that g + 1 no longer names (goneWith). Runs after each publish, on the publish queue (one
 * writer per table), so no generation is written meanwhile. A run stopped half-way leaves
 * nothing unreadable: a generation's pages are deleted before its head, its head before the
 * record of the oldest. A run makes at most `subrequests` besides its record and the latest
 * head: it stops before a generation whose head reads, directory reads and deletes would pass them.
 *
 * @example
 * await collectTable(env, "gameplay", { generations: 16, seconds: 604800 }); // { dropped: [1, 2], pages: 3 }
 */
export async function collectTable(
  env: Env,
  root: string,
  keep: Retention,
  now = Math.floor(Date.now() / 1000),
  subrequests = COLLECT_SUBREQUESTS,
): Promise<{ dropped: number[]; pages: number }> {
  const latest = await readHead(env, root);
  const dropped: number[] = [];
  let pages = 0;
  if (!latest) return { dropped, pages };
  const recorded = await env.BUCKET.get(oldestKey(root));
  const from = recorded ? Number((await recorded.json<{ oldest: number }>()).oldest) : 1;
  let g = from;
  let spent = 0;
  const last = latest.head.generation - Math.max(1, keep.generations);
  for (; g <= last && dropped.length < MAX_DROPS_PER_RUN && spent + 4 <= subrequests; g++) {
    const here = await readHead(env, root, g);
    spent++;
    // Gone already (a run stopped after deleting it): its pages went first.
    if (!here) continue;
    if (here.head.createdAt > now - keep.seconds) break;
    const next = g + 1 === latest.head.generation ? latest : await readHead(env, root, g + 1);
    spent++;
    // Without the next generation the pages still referenced are unknown: delete nothing.
    if (!next) break;
    // Its directory reads and at least two deletes must fit, or it waits for the next run.
    if (spent + readsOf(here.head, next.head) + 2 > subrequests) break;
    const { gone, reads } = await goneWith(env, root, here.head, next.head);
    spent += reads;
    // A page's pins (format 3) go with it.
    const dead = gone.flatMap((p) => [
      tableKeys.page(root, p.name),
      ...(p.pins === undefined ? [] : [tableKeys.pins(root, p.name)]),
    ]);
    for (let i = 0; i < dead.length; i += DELETE_BATCH) {
      await env.BUCKET.delete(dead.slice(i, i + DELETE_BATCH));
      spent++;
    }
    await env.BUCKET.delete(tableKeys.generation(root, g));
    spent++;
    dropped.push(g);
    pages += gone.length;
  }
  if (g !== from)
    await env.BUCKET.put(oldestKey(root), JSON.stringify({ oldest: g }), {
      httpMetadata: { contentType: "application/json" },
    });
  return { dropped, pages };
}
