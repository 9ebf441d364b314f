import { compareKeys } from "./entry.js";
import { gzip, sha256 } from "./digest.js";
import { SetDigest } from "./set-digest.js";
import {
  TABLE_HEAD_VERSION,
  type TableDirectoryRefV1,
  type TableEntryV1,
  type TableHeadDirectoriesV1,
  type TableHeadV1,
  type TablePageRefV1,
} from "../schema/index.js";
import { countPageShards } from "../page-shards.js";
import { cutRuns, DIRECTORY_TARGET, directoryParts, encodeDirectory } from "./directory.js";
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

/** The page (or directory page) a key belongs to: the last whose first key is ≤ it (the first for keys before every one). */
export function pageOf(pages: readonly { readonly first: string }[], key: string): number {
  let lo = 0;
  let hi = pages.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (compareKeys(pages[mid]!.first, key) <= 0) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Page reads in flight at once while merging: a Worker keeps six connections open at a time. */
export const LOAD_AHEAD = 6;

/**
 * The pages of the next generation: only pages a change falls into are read and rewritten
 * (split past PAGE_MAX entries, dropped when empty); the rest are the previous generation's,
 * by reference. Returns the new page list with the new pages' bodies to store. `shardBytes`:
 * each new page's ref counts its shards under the page-local rule (page-shards.ts) at that target.
 */
export async function mergePages(
  previous: readonly TablePageRefV1[],
  changes: TableChanges,
  load: (ref: TablePageRefV1) => Promise<readonly TableEntryV1[]>,
  name: (n: number) => string,
  pageTarget = PAGE_TARGET,
  shardBytes?: number,
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
  // The pages to read, in order, each started LOAD_AHEAD before it is merged: a spread generation
  // waits one round trip per LOAD_AHEAD pages rather than one per page, holding no more than that.
  const toRead = [...byPage.keys()].filter((p) => previous[p] !== undefined).sort((a, b) => a - b);
  const loads = new Map<number, Promise<readonly TableEntryV1[]>>();
  let started = 0;
  const startLoads = (upTo: number) => {
    for (; started < Math.min(upTo, toRead.length); started++) {
      const p = toRead[started]!;
      const loading = load(previous[p]!);
      // Read ahead of its turn: a failure is raised when the page's turn comes, not as unhandled.
      loading.catch(() => undefined);
      loads.set(p, loading);
    }
  };
  let reading = 0;
  for (let p = 0; p < count; p++) {
    const here = byPage.get(p);
    if (!here) {
      pages.push(previous[p]!);
      continue;
    }
    const entries = new Map<string, TableEntryV1>();
    if (previous[p]) {
      startLoads(++reading + LOAD_AHEAD - 1);
      const loaded = await loads.get(p)!;
      loads.delete(p);
      for (const e of loaded) entries.set(e.key, e);
    }
    for (const [key, entry] of here) {
      if (entry === null) entries.delete(key);
      else entries.set(key, entry);
    }
    const sorted = [...entries.values()].sort((a, b) => compareKeys(a.key, b.key));
    const parts = pageParts(sorted.length, previous.length === 0, pageTarget);
    const size = Math.ceil(sorted.length / Math.max(parts, 1));
    for (let i = 0; i < parts; i++) {
      const chunk = sorted.slice(i * size, (i + 1) * size);
      const ref = pageRefOf(name(written.length), chunk, shardBytes);
      pages.push(ref);
      written.push({ ref, entries: chunk });
    }
  }
  return { pages, written };
}

/**
 * A new page's ref (its SHA-256 and pins still to be filled in by storePage): key range,
 * count, bytes, summary and, with `shardBytes`, its shard count under the page-local rule.
 *
 * @example
 * const ref = pageRefOf("7-0", entries, 128 << 20);
 */
export function pageRefOf(name: string, entries: readonly TableEntryV1[], shardBytes?: number): TablePageRefV1 {
  return {
    name,
    first: entries[0]!.key,
    last: entries.at(-1)!.key,
    count: entries.length,
    bytes: entries.reduce((n, e) => n + e.size, 0),
    sha256: "",
    ...pageSummary(entries),
    ...(shardBytes === undefined
      ? {}
      : {
          shards: countPageShards(
            entries.map((e) => e.key),
            entries.map((e) => e.size),
            shardBytes,
          ),
        }),
  };
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
 * `shardBytes`: the table's shard target, at which the page stores its shards (page format 4).
 */
export async function encodePage(
  root: string,
  entries: TableEntryV1[],
  o: { readonly apart?: boolean; readonly shardBytes?: number | undefined } = {},
): Promise<StoredPart & { pins?: StoredPart }> {
  const bytes = encodePageBytes(root, entries, o);
  const page = await stored(bytes);
  // A JSON page ("{") holds its etags whatever was asked.
  if (!o.apart || bytes[0] === 0x7b) return page;
  return { ...page, pins: await stored(encodePins(entries.map((e) => e.etag))) };
}

/** A page as the publisher stores it: its name, its bytes (gzip) and, apart, its pins (gzip). */
export interface StoredPage {
  readonly name: string;
  readonly gz: Uint8Array;
  readonly pins?: Uint8Array;
}

/**
 * A new page's ref completed (SHA-256, and its pins' where they are apart) and its stored bytes,
 * its shards stored at the table's target `shardBytes` (page format 4).
 *
 * @example
 * const stored = await storePage("gameplay", ref, entries, true, 128 << 20);
 */
export async function storePage(
  root: string,
  ref: TablePageRefV1,
  entries: TableEntryV1[],
  pinsApart: boolean,
  shardBytes: number,
): Promise<StoredPage> {
  // Etags apart: open() reads the planning columns only, not the pins (bench/page-sections.ts weighs each).
  const page = await encodePage(root, entries, { apart: pinsApart, shardBytes });
  ref.sha256 = page.sha256;
  if (!page.pins) return { name: ref.name, gz: page.gz };
  ref.pins = page.pins.sha256;
  return { name: ref.name, gz: page.gz, pins: page.pins.gz };
}

/** Options of buildGeneration. */
export interface GenerationOptions {
  readonly root: string;
  /** The shard target of a new table (a format-2 table keeps its head's: its pages' shard counts are at that target). */
  readonly shardBytes: number;
  readonly now: number;
  readonly pageTarget?: number;
  /** Pages a new directory page is cut to (default DIRECTORY_TARGET; small in tests). */
  readonly directoryTarget?: number;
  /** Each page's etags stored apart, as its pins (what the edge publishes: open() reads no etag); default inside. */
  readonly pinsApart?: boolean;
  /** A directory page's page refs: needed where `previous` is a format-2 head and a change falls into it. */
  readonly directory?: (ref: TableDirectoryRefV1) => Promise<readonly TablePageRefV1[]>;
}

/**
 * The generation after `previous` with `changes` applied, in head format 2: its (unsigned)
 * head and the objects to store under `pages/` — the new pages (with their pins, with
 * `pinsApart`) and the new directory pages, named `{generation}-{n}` alike. Only the
 * directory pages a change falls into are read (`o.directory`) and rewritten (split past
 * DIRECTORY_MAX pages, dropped when empty), and within them only the pages a change falls
 * into: a generation that changes k pages stores k pages, at most k directory pages, and a
 * head. From a format-1 head (every page listed) the pages are cut into directory pages once.
 * Pure: the edge's publisher stores and signs it, and a benchmark seeds a large table with it.
 *
 * @example
 * const { head, pages } = await buildGeneration(undefined, changes, load, { root: "gameplay", shardBytes, now });
 */
export async function buildGeneration(
  previous: TableHeadV1 | undefined,
  changes: TableChanges,
  load: (ref: TablePageRefV1) => Promise<readonly TableEntryV1[]>,
  o: GenerationOptions,
): Promise<{ head: TableHeadDirectoriesV1; pages: StoredPage[] }> {
  const generation = (previous?.generation ?? 0) + 1;
  const shardBytes = previous?.version === 2 ? previous.shardBytes : o.shardBytes;
  const pageTarget = o.pageTarget ?? PAGE_TARGET;
  const dirTarget = o.directoryTarget ?? DIRECTORY_TARGET;
  let n = 0;
  const name = () => `${generation}-${n++}`;
  const written: { ref: TablePageRefV1; entries: TableEntryV1[] }[] = [];
  /** Directory pages in key order: kept by reference, or page lists to store. */
  const directories: (TableDirectoryRefV1 | TablePageRefV1[])[] = [];
  const merge = async (pages: readonly TablePageRefV1[], here: TableChanges) => {
    const merged = await mergePages(pages, here, load, name, pageTarget, shardBytes);
    written.push(...merged.written);
    return merged.pages;
  };
  if (previous?.version !== 2 || previous.directories.length === 0) {
    const pages = await merge(previous?.version === 1 ? previous.pages : [], changes);
    directories.push(...cutRuns(pages, directoryParts(pages.length, true, dirTarget)));
  } else {
    const dirs = previous.directories;
    const byDir = new Map<number, [string, TableEntryV1 | null][]>();
    for (const change of changes) {
      const d = pageOf(dirs, change[0]);
      const here = byDir.get(d);
      if (here) here.push(change);
      else byDir.set(d, [change]);
    }
    if (!o.directory && byDir.size > 0)
      throw new TypeError("Expected a directory loader to apply changes to a format-2 head but received none");
    const loaded = new Map(
      await Promise.all([...byDir.keys()].map(async (d) => [d, await o.directory!(dirs[d]!)] as const)),
    );
    for (let d = 0; d < dirs.length; d++) {
      const here = byDir.get(d);
      if (!here) {
        directories.push(dirs[d]!);
        continue;
      }
      const pages = await merge(loaded.get(d)!, new Map(here));
      directories.push(...cutRuns(pages, directoryParts(pages.length, false, dirTarget)));
    }
  }
  const stored = await Promise.all(
    written.map(({ ref, entries }) => storePage(o.root, ref, entries, o.pinsApart === true, shardBytes)),
  );
  const refs: TableDirectoryRefV1[] = [];
  for (const d of directories) {
    if (!Array.isArray(d)) {
      refs.push(d);
      continue;
    }
    const dir = await encodeDirectory(o.root, name(), d);
    refs.push(dir.ref);
    stored.push({ name: dir.ref.name, gz: dir.gz });
  }
  return { head: headOf(o.root, generation, o.now, shardBytes, refs), pages: stored };
}

/**
 * A format-2 head (unsigned) over its directory pages.
 *
 * @example
 * const head = headOf("gameplay", 7, now, 128 << 20, directories);
 */
export function headOf(
  root: string,
  generation: number,
  now: number,
  shardBytes: number,
  directories: TableDirectoryRefV1[],
): TableHeadDirectoriesV1 {
  return {
    version: TABLE_HEAD_VERSION,
    root,
    generation,
    createdAt: now,
    shardBytes,
    objects: directories.reduce((s, d) => s + d.count, 0),
    directories,
  };
}
