import { tableEntry, tableRoot } from "../../common/dataset-table/entry.js";
import { keyProblem, RESERVED_PREFIX } from "../../common/keys.js";
import { decodeIndex } from "../../common/media-index/index.js";
import type { TableEntryV1 } from "../../common/schema/index.js";
import { objectIndex } from "../manifest/object-index.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";

/** What indexing one key did: "duplicate" means this (key, etag) was already in the table's entries. */
export interface IndexOutcome {
  readonly outcome: "indexed" | "duplicate" | "removed" | "ignored";
  readonly root: string | undefined;
  /** Range reads of the object (the rest of the invocation's subrequest budget is the caller's). */
  readonly reads: number;
}

/** R2 subrequests one message costs besides the index build's range reads (heads, gets, puts). */
export const MESSAGE_OVERHEAD = 8;

/** What a pending mark's custom metadata may carry (R2 allows 2048 bytes of keys and values). */
const MAX_CARRIED_BYTES = 2000;

/** Records an entry and marks it pending for the next generation (entry first: a publisher that sees the mark sees the entry). */
export async function recordEntry(env: Env, root: string, entry: TableEntryV1): Promise<void> {
  await env.BUCKET.put(await tableKeys.entry(root, entry.key), JSON.stringify(entry), {
    httpMetadata: { contentType: "application/json" },
    customMetadata: { etag: entry.etag },
  });
  // The mark carries the entry where R2's custom metadata holds it (2 KiB): the publisher then
  // reads a thousand entries with one list call instead of a get each.
  const json = JSON.stringify(entry);
  const carried =
    new TextEncoder().encode(json).byteLength + new TextEncoder().encode(entry.key).byteLength <= MAX_CARRIED_BYTES;
  await env.BUCKET.put(await tableKeys.pending(root, entry.key, entry.etag), new Uint8Array(0), {
    customMetadata: carried ? { key: entry.key, entry: json } : { key: entry.key },
  });
}

/**
 * Brings one object's table entry up to date: indexes it at its current etag (the index
 * itself is cached by etag), or removes it when the object is gone. Idempotent by
 * (key, etag): an entry already recorded for the object's etag costs two heads and nothing
 * else. Keys outside any dataset or under `_ec/` are ignored.
 *
 * @example
 * await indexForTable(env, "gameplay/a.mp4");
 */
export async function indexForTable(env: Env, key: string, opts: { maxReads?: number } = {}): Promise<IndexOutcome> {
  const root = tableRoot(key);
  if (root === undefined || key.startsWith(RESERVED_PREFIX) || keyProblem(key) !== undefined)
    return { outcome: "ignored", root, reads: 0 };
  const entryKey = await tableKeys.entry(root, key);
  const [meta, recorded] = await Promise.all([env.BUCKET.head(key), env.BUCKET.head(entryKey)]);
  if (meta === null) {
    if (recorded === null) return { outcome: "duplicate", root, reads: 0 };
    await env.BUCKET.delete(entryKey);
    await env.BUCKET.put(await tableKeys.pending(root, key, ""), new Uint8Array(0), { customMetadata: { key } });
    return { outcome: "removed", root, reads: 0 };
  }
  if (recorded?.customMetadata?.etag === meta.httpEtag) return { outcome: "duplicate", root, reads: 0 };
  const built = await objectIndex(env, { key, ...(opts.maxReads !== undefined ? { maxReads: opts.maxReads } : {}) });
  // objectIndex heads the object again: if it changed in between, the entry is of the newer etag.
  await recordEntry(env, root, tableEntry(decodeIndex(built.bytes)));
  return { outcome: "indexed", root, reads: built.reads };
}
