import { chooseChanges } from "../../common/dataset-table/budget.js";
import { buildGeneration, PAGE_TARGET, type TableChanges } from "../../common/dataset-table/generation.js";
import { manifestSigner, publicKeys, signJson } from "../../common/manifest-sign.js";
import { SignedManifestV1, TableEntryV1, TableHeadV1, type TablePageRefV1 } from "../../common/schema/index.js";
import { pageEntries } from "../../common/dataset-table/page-pins.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../../common/shards.js";
import { InternalError } from "../errors.js";
import { envInt } from "../manifest/build-manifest.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";

/**
 * Pending marks one generation lists: one R2 list call (marks carry their entries), one
 * batched delete, and a get only for the few marks that cannot carry theirs.
 */
export const MAX_CHANGES_PER_GENERATION = 1000;

/**
 * Subrequests one generation makes at most, whatever the spread of its changes: the list,
 * the head read, the batched delete and three puts (GENERATION_FIXED), and within the rest
 * the page reads, page writes and entry gets that chooseChanges counts.
 */
export const GENERATION_SUBREQUESTS = 400;
export const GENERATION_FIXED = 6;
/** The least budget that always takes one change: fixed, a page and its pins read, up to three pages written with their pins, an entry get. */
export const MIN_GENERATION_SUBREQUESTS = GENERATION_FIXED + 9;

export interface PublishOptions {
  /** Subrequests the generation may make (default GENERATION_SUBREQUESTS, at least MIN_GENERATION_SUBREQUESTS). */
  readonly subrequests?: number;
  /** Entries a new page is cut to (default PAGE_TARGET; small in tests). */
  readonly pageTarget?: number;
  readonly now?: number;
}

/** The latest (or a named) generation's head, as stored: signed envelope and parsed head. */
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

/**
 * Publishes the next generation of `root`'s table from its pending entries: the first
 * MAX_CHANGES_PER_GENERATION marks, of which chooseChanges takes whole pages' worth within the
 * subrequest budget (`more` says others wait, for the next generation). Runs on the publish
 * queue, whose consumer has max_concurrency 1: one writer per table, so generations never
 * fork. A run with nothing pending publishes nothing (duplicate publish messages are free).
 * `subrequests` is what the run made, never more than the budget.
 *
 * @example
 * await publishTable(env, "gameplay"); // { generation: 3, objects: 1200, more: false, subrequests: 9 }
 */
export async function publishTable(
  env: Env,
  root: string,
  o: PublishOptions = {},
): Promise<{ generation: number; objects: number; more: boolean; subrequests: number } | undefined> {
  const budget = o.subrequests ?? GENERATION_SUBREQUESTS;
  if (!Number.isInteger(budget) || budget < MIN_GENERATION_SUBREQUESTS)
    throw new RangeError(
      `Expected a subrequest budget of at least ${MIN_GENERATION_SUBREQUESTS} but received ${budget}`,
    );
  const listed = await env.BUCKET.list({
    prefix: tableKeys.pendingPrefix(root),
    limit: MAX_CHANGES_PER_GENERATION,
    include: ["customMetadata"],
  });
  if (listed.objects.length === 0) return undefined;
  const previous = await readHead(env, root);
  const marks = new Map<string, { carried: string[]; names: string[] }>();
  const stray: string[] = [];
  for (const listedMark of listed.objects) {
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
  const chosen = chooseChanges(
    previous?.head.pages ?? [],
    [...marks].map(([key, m]) => ({ key, read: carriedEntry(m.carried) === undefined })),
    budget - GENERATION_FIXED,
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
  const head = await writeGeneration(env, root, previous?.head, changes, o.now, o.pageTarget);
  // Every taken mark is settled: an entry is written before its mark, so the entry read above is at least as new.
  await env.BUCKET.delete([...stray, ...chosen.keys.flatMap((key) => marks.get(key)!.names)]);
  return {
    generation: head.generation,
    objects: head.objects,
    more: listed.truncated || chosen.keys.length < marks.size,
    subrequests: GENERATION_FIXED + chosen.subrequests,
  };
}

/**
 * Writes the generation after `previous` with `changes` applied: the rewritten pages, then
 * the signed head under `gen/` and as `head.json`. The publisher's core; also what seeds a
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
  });
  // Pages and their pins before the head: a head never names one that is not stored.
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
