import { compareKeys } from "./entry.js";
import { gzip, sha256 } from "./digest.js";
import { SetDigest } from "./set-digest.js";
import type { TableEntryV1, TableHeadV1, TablePageRefV1 } from "../schema/index.js";
import { encodePageBytes } from "./page-codec.js";
import { encodePins } from "./page-pins.js";

/** Entries a new page is cut to, and the size past which a page is split. */
export const PAGE_TARGET = 1000;
export const PAGE_MAX = 2000;

/**
 * How many pages a merged page of `entries` is stored as: cut to `target` entries in a new
 * table (`fresh`) or past twice `target` (PAGE_MAX for the default), else one (none when empty).
 */
export function pageParts(entries: number, fresh: boolean, target = PAGE_TARGET): number {
  if (fresh || entries > 2 * target) return Math.ceil(entries / target);
  return entries > 0 ? 1 : 0;
}

/** Changes for the next generation: an entry to upsert, or null to remove the key. */
export type TableChanges = ReadonlyMap<string, TableEntryV1 | null>;

/** The page a key belongs to: the last whose first key is ≤ it (the first page for keys before every page). */
export function pageOf(pages: readonly TablePageRefV1[], key: string): number {
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
  pageTarget = PAGE_TARGET,
): Promise<{ pages: TablePageRefV1[]; written: { ref: TablePageRefV1; entries: TableEntryV1[] }[] }> {
  const byPage = new Map<number, [string, TableEntryV1 | null][]>();
  for (const change of changes) {
    const p = previous.length === 0 ? 0 : pageOf(previous, change[0]);
    // Appended in place: copying the list per change was quadratic in a large first generation.
    const here = byPage.get(p);
    if (here) here.push(change);
    else byPage.set(p, [change]);
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
    const parts = pageParts(sorted.length, previous.length === 0, pageTarget);
    const size = Math.ceil(sorted.length / Math.max(parts, 1));
    for (let i = 0; i < parts; i++) {
      const chunk = sorted.slice(i * size, (i + 1) * size);
      const ref = {
        name: name(written.length),
        first: chunk[0]!.key,
        last: chunk.at(-1)!.key,
        count: chunk.length,
        bytes: chunk.reduce((n, e) => n + e.size, 0),
        sha256: "",
        ...pageSummary(chunk),
      };
      pages.push(ref);
      written.push({ ref, entries: chunk });
    }
  }
  return { pages, written };
}

/**
 * What the head says of a page's objects, so that planning needs no page for it: their
 * SetDigest, and their frames, keyframes and error records counted.
 *
 * @example
 * pageSummary(entries); // { digest: "3f…", frames: 4800, keyframes: 160, errors: 1 }
 */
export function pageSummary(
  entries: readonly TableEntryV1[],
): Required<Pick<TablePageRefV1, "digest" | "frames" | "keyframes" | "errors">> {
  const digest = new SetDigest();
  let frames = 0;
  let keyframes = 0;
  let errors = 0;
  for (const e of entries) {
    digest.add(e.key, e.etag);
    if (e.kind === "video") frames += e.frames ?? 0;
    keyframes += e.keyframes?.length ?? 0;
    if (e.kind === "error") errors++;
  }
  return { digest: digest.toString(), frames, keyframes, errors };
}

/** A stored object of a table: its bytes gzip-compressed, and the SHA-256 of the bytes (what the head names). */
export interface StoredPart {
  readonly gz: Uint8Array;
  readonly sha256: string;
}

async function stored(bytes: Uint8Array): Promise<StoredPart> {
  return { gz: await gzip(bytes), sha256: await sha256(bytes) };
}

/**
 * A page as stored: its bytes (columns, page-codec.ts; the head's digest covers them)
 * gzip-compressed. `apart`: its etags left out of it, as its pins (page-pins.ts), which open()
 * does not read; a page stored as JSON (numbers past the columns) keeps them and has no pins.
 */
export async function encodePage(
  root: string,
  entries: TableEntryV1[],
  o: { readonly apart?: boolean } = {},
): Promise<StoredPart & { pins?: StoredPart }> {
  const bytes = encodePageBytes(root, entries, o);
  const page = await stored(bytes);
  // A JSON page ("{") holds its etags whatever was asked.
  if (!o.apart || bytes[0] === 0x7b) return page;
  return { ...page, pins: await stored(encodePins(entries.map((e) => e.etag))) };
}

/**
 * The generation after `previous` with `changes` applied: its (unsigned) head and the new
 * pages (and their pins, with `pinsApart`) to store under their names. Pure: the edge's publisher stores and signs it, and a
 * benchmark seeds a large table with it.
 *
 * @example
 * const { head, pages } = await buildGeneration(undefined, changes, load, { root: "gameplay", shardBytes, now });
 */
export async function buildGeneration(
  previous: TableHeadV1 | undefined,
  changes: TableChanges,
  load: (ref: TablePageRefV1) => Promise<readonly TableEntryV1[]>,
  o: {
    root: string;
    shardBytes: number;
    now: number;
    pageTarget?: number;
    /** Each page's etags stored apart, as its pins (what the edge publishes: open() reads no etag); default inside. */
    pinsApart?: boolean;
  },
): Promise<{ head: TableHeadV1; pages: { name: string; gz: Uint8Array; pins?: Uint8Array }[] }> {
  const generation = (previous?.generation ?? 0) + 1;
  const { pages, written } = await mergePages(
    previous?.pages ?? [],
    changes,
    load,
    (n) => `${generation}-${n}`,
    o.pageTarget ?? PAGE_TARGET,
  );
  const stored = await Promise.all(
    written.map(async ({ ref, entries }) => {
      // Etags apart: open() reads the planning columns only, not the pins (bench/page-sections.ts weighs each).
      const page = await encodePage(o.root, entries, { apart: o.pinsApart === true });
      ref.sha256 = page.sha256;
      if (!page.pins) return { name: ref.name, gz: page.gz };
      ref.pins = page.pins.sha256;
      return { name: ref.name, gz: page.gz, pins: page.pins.gz };
    }),
  );
  const head: TableHeadV1 = {
    version: 1,
    root: o.root,
    generation,
    createdAt: o.now,
    shardBytes: o.shardBytes,
    objects: pages.reduce((n, p) => n + p.count, 0),
    pages,
  };
  return { head, pages: stored };
}
