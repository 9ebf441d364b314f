/**
 * Directory pages (head format 2): a generation's page refs cut into runs of at most
 * DIRECTORY_MAX, each stored as gzip JSON (TableDirectoryV1) under the table's `pages/` and
 * named by the head with its SHA-256 and its pages summed up (TableDirectoryRefV1). The head
 * lists directory pages, not pages, so it stays small, and a generation that changes k pages
 * rewrites those pages, the directory pages they fall into and the head.
 */
import {
  TableDirectoryV1,
  type TableDirectoryRefV1,
  type TableHeadDirectoriesV1,
  type TablePageRefV1,
} from "../schema/index.js";
import { gzip, sha256 } from "./digest.js";
import { TablePageFormatError } from "./page-errors.js";
import { SetDigest } from "./set-digest.js";

/** Pages a new directory page is cut to: ≈ 80 KB of JSON, ≈ 45 KB gzip, one read at open. */
export const DIRECTORY_TARGET = 256;
/** Pages past which a rewritten directory page is split (to DIRECTORY_TARGET each). */
export const DIRECTORY_MAX = 2 * DIRECTORY_TARGET;

/**
 * How many directory pages `pages` page refs are stored as: cut to `target` in a new table
 * (`fresh`), or past twice `target`, else one (none when empty).
 */
export function directoryParts(pages: number, fresh: boolean, target = DIRECTORY_TARGET): number {
  if (fresh || pages > 2 * target) return Math.ceil(pages / target);
  return pages > 0 ? 1 : 0;
}

/** `pages` cut into `parts` runs as even as they come. */
export function cutRuns<T>(xs: readonly T[], parts: number): T[][] {
  const size = Math.ceil(xs.length / Math.max(parts, 1));
  return Array.from({ length: parts }, (_, i) => xs.slice(i * size, (i + 1) * size));
}

/**
 * A directory page's ref without its name and SHA-256: its key range, and its pages summed up
 * (a summary any of its pages lacks is left out).
 *
 * @example
 * directorySummary(pages); // { first, last, pages: 256, count: 256000, bytes, digest, frames, keyframes, errors, shards }
 */
export function directorySummary(pages: readonly TablePageRefV1[]): Omit<TableDirectoryRefV1, "name" | "sha256"> {
  const digest = new SetDigest();
  let count = 0;
  let bytes = 0;
  let frames = 0;
  let keyframes = 0;
  let errors = 0;
  let shards = 0;
  let summed = true;
  let sharded = true;
  for (const p of pages) {
    count += p.count;
    bytes += p.bytes;
    if (p.digest === undefined || p.frames === undefined || p.keyframes === undefined || p.errors === undefined)
      summed = false;
    else {
      digest.addDigest(p.digest, p.count);
      frames += p.frames;
      keyframes += p.keyframes;
      errors += p.errors;
    }
    if (p.shards === undefined) sharded = false;
    else shards += p.shards;
  }
  return {
    first: pages[0]!.first,
    last: pages.at(-1)!.last,
    pages: pages.length,
    count,
    bytes,
    ...(summed ? { digest: digest.toString(), frames, keyframes, errors } : {}),
    ...(sharded ? { shards } : {}),
  };
}

/** A directory page's JSON bytes (what its SHA-256 covers). */
export function encodeDirectoryBytes(root: string, pages: readonly TablePageRefV1[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ directory: 1, root, pages: [...pages] } satisfies TableDirectoryV1));
}

/**
 * A directory page as stored (gzip, with its SHA-256) and its ref in the head.
 *
 * @example
 * const { ref, gz } = await encodeDirectory("gameplay", "7-12", pages);
 */
export async function encodeDirectory(
  root: string,
  name: string,
  pages: readonly TablePageRefV1[],
): Promise<{ ref: TableDirectoryRefV1; gz: Uint8Array }> {
  const bytes = encodeDirectoryBytes(root, pages);
  const ref = { name, sha256: await sha256(bytes), ...directorySummary(pages) };
  return { ref, gz: await gzip(bytes) };
}

/**
 * A directory page's bytes (decompressed) to its page refs; anything else is
 * ERR_TABLE_PAGE_FORMAT.
 *
 * @example
 * const pages = decodeDirectory(bytes);
 */
export function decodeDirectory(bytes: Uint8Array): TablePageRefV1[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new TablePageFormatError("Expected a table directory page (JSON) but received other bytes", { cause });
  }
  const got = TableDirectoryV1.safeParse(parsed);
  if (!got.success)
    throw new TablePageFormatError(`Expected a table directory page but received something else: ${got.error.message}`);
  return got.data.pages;
}

/**
 * Where each directory page starts in the generation's page list and entry list (prefix sums
 * of the head's `pages` and `count`), with the totals last: `pageStart[d]` is the index of
 * directory d's first page, `entryStart[d]` of its first entry.
 *
 * @example
 * const { pageStart, entryStart } = directoryStarts(head); // pageStart.at(-1) === every page
 */
export function directoryStarts(head: TableHeadDirectoriesV1): { pageStart: number[]; entryStart: number[] } {
  const pageStart = [0];
  const entryStart = [0];
  for (const d of head.directories) {
    pageStart.push(pageStart.at(-1)! + d.pages);
    entryStart.push(entryStart.at(-1)! + d.count);
  }
  return { pageStart, entryStart };
}

/** The last index i of sorted `starts` (length n + 1) with starts[i] ≤ x, below n: the run holding x. */
export function runOf(starts: readonly number[], x: number): number {
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
