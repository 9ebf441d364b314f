import {
  chooseChanges,
  directoriesInReach,
  MAX_DIRECTORIES_PER_GENERATION,
} from "../../common/dataset-table/budget.js";
import { decodeDirectory, DIRECTORY_TARGET } from "../../common/dataset-table/directory.js";
import { buildGeneration, PAGE_TARGET, pageOf, type TableChanges } from "../../common/dataset-table/generation.js";
import { manifestSigner, publicKeys, signJson } from "../../common/manifest-sign.js";
import {
  SignedManifestV1,
  TableEntryV1,
  TableHeadV1,
  type TableDirectoryRefV1,
  type TablePageRefV1,
} from "../../common/schema/index.js";
import { pageEntries } from "../../common/dataset-table/page-pins.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../../common/shards.js";
import { InternalError } from "../errors.js";
import { envInt } from "../manifest/build-manifest.js";
import { tableKeys, tablePrefix } from "../../common/dataset-table/table-keys.js";

/** Pending marks one R2 list call returns, and what R2's batched delete takes at once. */
const LIST_LIMIT = 1000;

/**
 * Thousands of pending marks one generation lists at most (one per 40 subrequests of its
 * budget): 10,000 changes a generation, so 10^7 appended objects publish in 10^3 generations.
 */
export const MAX_LIST_CALLS = 10;

/** Pending marks one generation lists at most. */
export const MAX_CHANGES_PER_GENERATION = MAX_LIST_CALLS * LIST_LIMIT;

/**
 * Subrequests one generation makes at most, whatever the spread of its changes: its list calls
 * of marks (listCalls' worth of marks, in as many calls as R2 takes to return them), a batched
 * delete per 1000 marks, the sweep's record read and written, the head read and three puts
 * (listedCost), and within the rest the directory pages read and rewritten and the page reads,
 * page writes and entry gets that chooseChanges counts.
 */
export const GENERATION_SUBREQUESTS = 400;
/** What a generation of one list call costs besides its directory and page work: two lists (one to wrap the sweep), the sweep's get and put, head read, delete, three puts. */
export const GENERATION_FIXED = 9;
/**
 * The least budget that always takes one change: fixed, one directory page read and up to three
 * written, a page and its pins read, up to three pages written with their pins, an entry get.
 */
export const MIN_GENERATION_SUBREQUESTS = GENERATION_FIXED + 4 + 9;
export { MAX_DIRECTORIES_PER_GENERATION };

/** Marks a generation lists within `budget`, in thousands: one per 40 subrequests, one at least, MAX_LIST_CALLS at most. */
export function listCalls(budget: number): number {
  return Math.max(1, Math.min(MAX_LIST_CALLS, Math.floor(budget / 40)));
}

/**
 * List calls a generation may make for its listCalls thousands of marks: R2 may return fewer
 * objects than asked when a list includes custom metadata (the local R2 returns 100 of 1000),
 * so as many as that takes, up to a quarter of `budget`, and never into what one change needs.
 */
export function maxListCalls(budget: number): number {
  const reserve = MIN_GENERATION_SUBREQUESTS - GENERATION_FIXED + listCalls(budget) + 6;
  return Math.max(1, Math.min(Math.floor(budget / 4), budget - reserve));
}

/**
 * What a generation costs besides its directories and pages once it made `made` list calls for
 * `marks` marks: a batched delete per 1000 marks, the sweep's get and put, the head read and
 * three puts.
 */
export const listedCost = (made: number, marks: number) => made + Math.max(1, Math.ceil(marks / LIST_LIMIT)) + 6;

/**
 * Where the publisher's sweep stands: the last pending mark it settled. Each generation lists
 * the marks after it, so successive generations walk the table in key order and wrap at its
 * end, rather than each starting again at the first key.
 */
export const sweepKey = (root: string) => `${tablePrefix(root)}sweep.json`;

/**
 * Changes per page rewritten below which a generation is sparse: the next one waits the publish
 * debounce instead of following at once, so that spread changes gather in their pages first
 * (each rewrite costs a page's read, merge, gzip and two puts, whatever it brings).
 */
export const DENSE_CHANGES_PER_PAGE = 100;

export interface PublishOptions {
  /** Subrequests the generation may make (default GENERATION_SUBREQUESTS, at least MIN_GENERATION_SUBREQUESTS). */
  readonly subrequests?: number;
  /** Entries a new page is cut to (default PAGE_TARGET; small in tests). */
  readonly pageTarget?: number;
  /** Pages a new directory page is cut to (default DIRECTORY_TARGET; small in tests). */
  readonly directoryTarget?: number;
  readonly now?: number;
}

/** What one generation did: `changes` taken, `pages` of the previous generation they fell into (rewritten). */
export interface PublishedGeneration {
  readonly generation: number;
  readonly objects: number;
  readonly changes: number;
  readonly pages: number;
  readonly more: boolean;
  readonly sparse: boolean;
  readonly subrequests: number;
}

/** The latest (or a named) generation's head, as stored: signed envelope and parsed head (format 1 or 2). */
export async function readHead(
  env: Env,
  root: string,
  generation?: number,
): Promise<{ signed: SignedManifestV1; head: TableHeadV1 } | undefined> {
  const got = await env.BUCKET.get(
    generation === undefined ? tableKeys.head(root) : tableKeys.generation(root, generation),
  );
  if (got === null) return undefined;
  const signed = SignedManifestV1.parse(await got.json());
  return { signed, head: TableHeadV1.parse(JSON.parse(signed.payload)) };
}

/** A stored object of the table, decompressed. */
async function readStored(env: Env, key: string): Promise<Uint8Array> {
  const got = await env.BUCKET.get(key);
  if (got === null) throw new InternalError(new Error(`table object ${key} is missing`));
  return new Uint8Array(await new Response(got.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
}

/**
 * A stored page's entries, in any page format (a generation written before columns is merged
 * the same way), with their etags from the page's pins where it keeps them apart.
 */
export async function readPage(env: Env, root: string, ref: TablePageRefV1): Promise<TableEntryV1[]> {
  const [bytes, pins] = await Promise.all([
    readStored(env, tableKeys.page(root, ref.name)),
    ref.pins === undefined ? undefined : readStored(env, tableKeys.pins(root, ref.name)),
  ]);
  return pageEntries(bytes, pins);
}

/** A stored directory page's page refs (head format 2). */
export async function readDirectory(env: Env, root: string, ref: TableDirectoryRefV1): Promise<TablePageRefV1[]> {
  return decodeDirectory(await readStored(env, tableKeys.page(root, ref.name)));
}

/**
 * The page refs the changes of one generation may fall into (directoriesInReach: from a
 * format-2 head, those of the directory pages it takes, read now; from a format-1 head every
 * page; none in a new table), the keys it may take and the subrequests reserved for directory pages.
 */
async function pagesInReach(
  env: Env,
  root: string,
  head: TableHeadV1 | undefined,
  keys: readonly string[],
  budget: number,
  directoryTarget: number,
): Promise<{ pages: TablePageRefV1[]; keys: string[]; reserved: number; loaded: Map<string, TablePageRefV1[]> }> {
  const reach = directoriesInReach(head, keys, budget, directoryTarget);
  const loaded = new Map<string, TablePageRefV1[]>();
  if (head?.version === 1) return { pages: head.pages, keys: reach.keys, reserved: reach.reserved, loaded };
  const dirs = head?.version === 2 ? head.directories : [];
  const lists = await Promise.all(reach.directories.map((d) => readDirectory(env, root, dirs[d]!)));
  reach.directories.forEach((d, i) => loaded.set(dirs[d]!.name, lists[i]!));
  return { pages: lists.flat(), keys: reach.keys, reserved: reach.reserved, loaded };
}

/**
 * Publishes the next generation of `root`'s table from its pending entries: the first
 * MAX_CHANGES_PER_GENERATION marks after where the last generation stopped (1000 per 40
 * subrequests of budget, in as many list calls as R2 takes to return them: maxListCalls; sweepKey), of which chooseChanges takes, in the directory pages
 * within reach, whole pages' worth within the subrequest budget (`more` says others wait, for
 * the next generation). Successive generations so sweep the table in key order and wrap: each
 * page is rewritten once a sweep with every change pending in it, however spread the changes
 * arrive, where starting each generation at the first key rewrote the first pages again and
 * again for the few changes that had arrived in them meanwhile. Runs on the publish
 * queue, whose consumer has max_concurrency 1: one writer per table, so generations never
 * fork. `sparse`: it took fewer than DENSE_CHANGES_PER_PAGE changes per page rewritten. A run with nothing pending publishes nothing (duplicate publish messages are free).
 * `subrequests` is what the run made, never more than the budget.
 *
 * @example
 * await publishTable(env, "gameplay"); // { generation: 3, objects: 1200, changes: 200, pages: 1, more: false, sparse: false, subrequests: 31 }
 */
export async function publishTable(
  env: Env,
  root: string,
  o: PublishOptions = {},
): Promise<PublishedGeneration | undefined> {
  const budget = o.subrequests ?? GENERATION_SUBREQUESTS;
  if (!Number.isInteger(budget) || budget < MIN_GENERATION_SUBREQUESTS)
    throw new RangeError(
      `Expected a subrequest budget of at least ${MIN_GENERATION_SUBREQUESTS} but received ${budget}`,
    );
  const wanted = listCalls(budget) * LIST_LIMIT;
  const maxLists = maxListCalls(budget);
  const swept = await env.BUCKET.get(sweepKey(root));
  // Where the last generation stopped: this one lists the marks after it (a wrap starts again at the first).
  const stored = swept === null ? undefined : ((await swept.json<{ after?: string }>()).after ?? undefined);
  let after = stored;
  const objects: R2Object[] = [];
  let truncated = true;
  let cursor: string | undefined;
  let made = 0;
  // R2 may return fewer marks than the limit (metadata included): list on until the generation has its marks.
  while (truncated && objects.length < wanted && made < maxLists) {
    const listed = await env.BUCKET.list({
      prefix: tableKeys.pendingPrefix(root),
      limit: Math.min(LIST_LIMIT, wanted - objects.length),
      include: ["customMetadata"],
      ...(cursor !== undefined ? { cursor } : after !== undefined ? { startAfter: after } : {}),
    });
    made++;
    objects.push(...listed.objects);
    truncated = listed.truncated;
    cursor = listed.truncated ? listed.cursor : undefined;
    // Nothing after the sweep's mark: wrap to the first key.
    if (made === 1 && objects.length === 0 && after !== undefined) {
      after = undefined;
      truncated = true;
    }
  }
  if (objects.length === 0) return undefined;
  const previous = await readHead(env, root);
  const marks = new Map<string, { carried: string[]; names: string[] }>();
  const stray: string[] = [];
  for (const listedMark of objects) {
    const key = listedMark.customMetadata?.key;
    if (key === undefined) {
      stray.push(listedMark.key);
      continue;
    }
    const mark = marks.get(key) ?? { carried: [], names: [] };
    mark.carried.push(listedMark.customMetadata?.entry ?? "");
    mark.names.push(listedMark.key);
    marks.set(key, mark);
  }
  // One mark carrying its entry is that entry; several marks (which is newer?), a removal or
  // an entry too large to carry are read from the entry record, the latest by construction.
  const carriedEntry = (carried: string[]) => (carried.length === 1 && carried[0] ? carried[0] : undefined);
  const fixed = listedCost(made, objects.length);
  const directoryTarget = o.directoryTarget ?? DIRECTORY_TARGET;
  const reach = await pagesInReach(env, root, previous?.head, [...marks.keys()], budget - fixed, directoryTarget);
  const chosen = chooseChanges(
    reach.pages,
    reach.keys.map((key) => ({ key, read: carriedEntry(marks.get(key)!.carried) === undefined })),
    budget - fixed - reach.reserved,
    o.pageTarget,
    true,
  );
  const changes = new Map<string, TableEntryV1 | null>();
  await Promise.all(
    chosen.keys.map(async (key) => {
      const carried = carriedEntry(marks.get(key)!.carried);
      if (carried) return void changes.set(key, TableEntryV1.parse(JSON.parse(carried)));
      const got = await env.BUCKET.get(await tableKeys.entry(root, key));
      changes.set(key, got === null ? null : TableEntryV1.parse(await got.json()));
    }),
  );
  const head = await writeGeneration(env, root, previous?.head, changes, o.now, o.pageTarget, {
    directoryTarget,
    directories: reach.loaded,
  });
  // Every taken mark is settled: an entry is written before its mark, so the entry read above is at least as new.
  const settled = [...stray, ...chosen.keys.flatMap((key) => marks.get(key)!.names)];
  for (let i = 0; i < settled.length; i += LIST_LIMIT) await env.BUCKET.delete(settled.slice(i, i + LIST_LIMIT));
  // The next generation goes on after the last mark settled here; past the end of the listing it wraps.
  const everything = !truncated && chosen.keys.length === marks.size;
  // R2 lists names in UTF-8 byte order and sort() by UTF-16 unit: they differ only past U+FFFF,
  // where a mark the cursor passes over waits for the next sweep, never longer.
  const next = everything ? undefined : [...settled].sort().at(-1);
  if (next !== stored)
    await env.BUCKET.put(sweepKey(root), JSON.stringify({ after: next }), {
      httpMetadata: { contentType: "application/json" },
    });
  const pages = pagesTouched(reach.pages, chosen.keys);
  return {
    generation: head.generation,
    objects: head.objects,
    changes: chosen.keys.length,
    pages,
    // Marks before where this sweep began may wait too: the next generation wraps to them.
    more: !everything || after !== undefined,
    sparse: chosen.keys.length < DENSE_CHANGES_PER_PAGE * pages,
    subrequests: fixed + reach.reserved + chosen.subrequests,
  };
}

/** The pages of `pages` that `keys` fall into (one in a new table). */
function pagesTouched(pages: readonly TablePageRefV1[], keys: readonly string[]): number {
  return pages.length === 0 ? 1 : new Set(keys.map((key) => pageOf(pages, key))).size;
}

/**
 * Writes the generation after `previous` with `changes` applied (head format 2): the
 * rewritten pages and directory pages, then the signed head under `gen/` and as `head.json`. The publisher's core; also what seeds a
 * large table in one go (bench/open-scale.ts).
 *
 * @example
 * const head = await writeGeneration(env, "gameplay", undefined, new Map(entries.map((e) => [e.key, e])));
 */
export async function writeGeneration(
  env: Env,
  root: string,
  previous: TableHeadV1 | undefined,
  changes: TableChanges,
  now = Math.floor(Date.now() / 1000),
  pageTarget = PAGE_TARGET,
  o: {
    readonly directoryTarget?: number;
    /** Directory pages already read, by name (the rest are read as the changes need them). */
    readonly directories?: ReadonlyMap<string, TablePageRefV1[]>;
  } = {},
): Promise<TableHeadV1> {
  const signer = await manifestSigner(env.EC_MANIFEST_KEY).catch((cause: unknown) => {
    throw new InternalError(cause);
  });
  const { head, pages } = await buildGeneration(previous, changes, (ref) => readPage(env, root, ref), {
    root,
    shardBytes: envInt(env.EC_SHARD_TARGET_BYTES, DEFAULT_SHARD_TARGET_BYTES),
    now,
    pageTarget,
    pinsApart: true,
    ...(o.directoryTarget === undefined ? {} : { directoryTarget: o.directoryTarget }),
    directory: async (ref) => o.directories?.get(ref.name) ?? readDirectory(env, root, ref),
  });
  // Pages, their pins and the directory pages before the head: a head never names one that is not stored.
  await Promise.all(
    pages.flatMap((p) => [
      env.BUCKET.put(tableKeys.page(root, p.name), p.gz, {
        httpMetadata: { contentType: "application/json", contentEncoding: "gzip" },
      }),
      ...(p.pins
        ? [
            env.BUCKET.put(tableKeys.pins(root, p.name), p.pins, {
              httpMetadata: { contentType: "application/octet-stream", contentEncoding: "gzip" },
            }),
          ]
        : []),
    ]),
  );
  const body = JSON.stringify(await signJson(head, signer));
  // The generation first: a head never names a generation that is not stored.
  await env.BUCKET.put(tableKeys.generation(root, head.generation), body, {
    httpMetadata: { contentType: "application/json" },
  });
  await env.BUCKET.put(tableKeys.head(root), body, { httpMetadata: { contentType: "application/json" } });
  await env.BUCKET.put(tableKeys.publicKeys(), JSON.stringify(publicKeys([signer])), {
    httpMetadata: { contentType: "application/json" },
  });
  return head;
}
