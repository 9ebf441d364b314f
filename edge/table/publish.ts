import { compareKeys } from "../../common/dataset-table/entry.js";
import { manifestSigner, signJson } from "../../common/manifest-sign.js";
import { SignedManifestV1, TableEntryV1, TableHeadV1, TablePageV1, type TablePageRefV1 } from "../../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../../common/shards.js";
import { InternalError } from "../errors.js";
import { envInt } from "../manifest/build-manifest.js";
import { gunzip, gzip, sha256 } from "./gzip.js";
import { tableKeys } from "./table-keys.js";

/** Pending entries one generation takes in (one R2 list call and one get each, within a Worker's 1000 subrequests). */
export const MAX_CHANGES_PER_GENERATION = 500;
/** Entries a new page is cut to, and the size past which a page is split. */
export const PAGE_TARGET = 1000;
export const PAGE_MAX = 2000;

/** The latest (or a named) generation's head, as stored: signed envelope and parsed head. */
export async function readHead(env: Env, root: string, generation?: number): Promise<{ signed: SignedManifestV1; head: TableHeadV1 } | undefined> {
  const got = await env.BUCKET.get(generation === undefined ? tableKeys.head(root) : tableKeys.generation(root, generation));
  if (got === null) return undefined;
  const signed = SignedManifestV1.parse(await got.json());
  return { signed, head: TableHeadV1.parse(JSON.parse(signed.payload)) };
}

export async function readPage(env: Env, root: string, name: string): Promise<TablePageV1> {
  const got = await env.BUCKET.get(tableKeys.page(root, name));
  if (got === null) throw new InternalError(new Error(`table page ${root}/${name} is missing`));
  return TablePageV1.parse(JSON.parse(new TextDecoder().decode(await gunzip(got.body))));
}

/** Changes for the next generation: an entry to upsert, or null to remove the key. */
export type TableChanges = ReadonlyMap<string, TableEntryV1 | null>;

/** The page a key belongs to: the last whose first key is ≤ it (the first page for keys before every page). */
function pageOf(pages: readonly TablePageRefV1[], key: string): number {
  let lo = 0;
  let hi = pages.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (compareKeys(pages[mid]!.first, key) <= 0) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The pages of the next generation: only pages a change falls into are read and rewritten
 * (split past PAGE_MAX entries, dropped when empty); the rest are the previous generation's,
 * by reference. Returns the new page list with the new pages' bodies to store.
 */
export async function mergePages(
  previous: readonly TablePageRefV1[],
  changes: TableChanges,
  load: (ref: TablePageRefV1) => Promise<readonly TableEntryV1[]>,
  name: (n: number) => string,
): Promise<{ pages: TablePageRefV1[]; written: { ref: TablePageRefV1; entries: TableEntryV1[] }[] }> {
  const byPage = new Map<number, [string, TableEntryV1 | null][]>();
  for (const change of changes) {
    const p = previous.length === 0 ? 0 : pageOf(previous, change[0]);
    byPage.set(p, [...(byPage.get(p) ?? []), change]);
  }
  const pages: TablePageRefV1[] = [];
  const written: { ref: TablePageRefV1; entries: TableEntryV1[] }[] = [];
  const count = Math.max(previous.length, 1);
  for (let p = 0; p < count; p++) {
    const here = byPage.get(p);
    if (!here) {
      pages.push(previous[p]!);
      continue;
    }
    const entries = new Map<string, TableEntryV1>();
    if (previous[p]) for (const e of await load(previous[p]!)) entries.set(e.key, e);
    for (const [key, entry] of here) {
      if (entry === null) entries.delete(key);
      else entries.set(key, entry);
    }
    const sorted = [...entries.values()].sort((a, b) => compareKeys(a.key, b.key));
    const parts = sorted.length > PAGE_MAX || previous.length === 0 ? Math.ceil(sorted.length / PAGE_TARGET) : sorted.length > 0 ? 1 : 0;
    const size = Math.ceil(sorted.length / Math.max(parts, 1));
    for (let i = 0; i < parts; i++) {
      const chunk = sorted.slice(i * size, (i + 1) * size);
      const ref = { name: name(written.length), first: chunk[0]!.key, last: chunk.at(-1)!.key, count: chunk.length, bytes: chunk.reduce((n, e) => n + e.size, 0), sha256: "" };
      pages.push(ref);
      written.push({ ref, entries: chunk });
    }
  }
  return { pages, written };
}

/**
 * Publishes the next generation of `root`'s table from its pending entries (at most
 * MAX_CHANGES_PER_GENERATION; `more` says others wait). Runs on the publish queue, whose
 * consumer has max_concurrency 1: one writer per table, so generations never fork. A run
 * with nothing pending publishes nothing (duplicate publish messages are free).
 *
 * @example
 * await publishTable(env, "gameplay"); // { generation: 3, objects: 1200, more: false }
 */
export async function publishTable(env: Env, root: string, now = Math.floor(Date.now() / 1000)): Promise<{ generation: number; objects: number; more: boolean } | undefined> {
  const listed = await env.BUCKET.list({ prefix: tableKeys.pendingPrefix(root), limit: MAX_CHANGES_PER_GENERATION, include: ["customMetadata"] });
  if (listed.objects.length === 0) return undefined;
  const signer = await manifestSigner(env.EC_MANIFEST_KEY).catch((cause: unknown) => {
    throw new InternalError(cause);
  });
  const previous = await readHead(env, root);
  const keys = [...new Set(listed.objects.map((o) => o.customMetadata?.key).filter((k): k is string => k !== undefined))];
  const changes = new Map<string, TableEntryV1 | null>();
  await Promise.all(
    keys.map(async (key) => {
      const got = await env.BUCKET.get(await tableKeys.entry(root, key));
      changes.set(key, got === null ? null : TableEntryV1.parse(await got.json()));
    }),
  );
  const generation = (previous?.head.generation ?? 0) + 1;
  const { pages, written } = await mergePages(previous?.head.pages ?? [], changes, async (ref) => (await readPage(env, root, ref.name)).entries, (n) => `${generation}-${n}`);
  await Promise.all(
    written.map(async ({ ref, entries }) => {
      const bytes = new TextEncoder().encode(JSON.stringify({ version: 1, root, entries } satisfies TablePageV1));
      ref.sha256 = await sha256(bytes);
      await env.BUCKET.put(tableKeys.page(root, ref.name), await gzip(bytes), { httpMetadata: { contentType: "application/json", contentEncoding: "gzip" } });
    }),
  );
  const head: TableHeadV1 = {
    version: 1,
    root,
    generation,
    createdAt: now,
    shardBytes: envInt(env.EC_SHARD_TARGET_BYTES, DEFAULT_SHARD_TARGET_BYTES),
    objects: pages.reduce((n, p) => n + p.count, 0),
    pages,
  };
  const body = JSON.stringify(await signJson(head, signer));
  // The generation first: a head never names a generation that is not stored.
  await env.BUCKET.put(tableKeys.generation(root, generation), body, { httpMetadata: { contentType: "application/json" } });
  await env.BUCKET.put(tableKeys.head(root), body, { httpMetadata: { contentType: "application/json" } });
  // Every listed mark is settled: an entry is written before its mark, so the entry read above is at least as new.
  await env.BUCKET.delete(listed.objects.map((o) => o.key));
  return { generation, objects: head.objects, more: listed.truncated };
}
