import { MAX_KEY_BYTES, RESERVED_PREFIX } from "../keys.js";
import { bareEtag } from "../schema/index.js";
import { INDEX_FORMAT_VERSION } from "../media-index/codec.js";

const encoder = new TextEncoder();

/**
 * `prefix + key`, or `prefix + sha256-<hex of key>` where that would pass R2's 1024-byte cap
 * (a near-limit user key under a reserved prefix); records keep the real key in their body.
 *
 * @example
 * await reservedKey("_ec/index/v1/abc/", "gameplay/a.mp4"); // "_ec/index/v1/abc/gameplay/a.mp4"
 */
export async function reservedKey(prefix: string, key: string): Promise<string> {
  const readable = `${prefix}${key}`;
  if (encoder.encode(readable).byteLength <= MAX_KEY_BYTES) return readable;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(key)));
  return `${prefix}sha256-${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Where an object's index is cached: under the reserved prefix, keyed by the object's etag
 * (bare, as R2 reports it), so a replaced object misses the cache and gets a new index, and no
 * index ever answers for another version.
 *
 * @example
 * await indexCacheKey("9e1f…", "gameplay/a.mp4"); // "_ec/index/v2/9e1f…/gameplay/a.mp4"
 */
export function indexCacheKey(etag: string, key: string): Promise<string> {
  return reservedKey(`${RESERVED_PREFIX}index/v${INDEX_FORMAT_VERSION}/${etag}/`, key);
}

/** Everything of one root's table lives under this prefix. */
export const tablePrefix = (root: string) => `${RESERVED_PREFIX}table/v1/${root}/`;

/**
 * Where a table's parts live under `_ec/table/v1/{root}/`: `entries/{key}` (the latest entry
 * of each object, written by the indexer), `pending/{key}/{etag}` (entries not yet in a
 * generation; named key first so that they list in key order and neighbouring changes share
 * pages), `pages/{generation}-{n}.json` (a page or a directory page, immutable, gzip) and `pages/{generation}-{n}.pins` (its
 * etags where the page leaves them out, immutable, gzip), `gen/{generation}.json` (each
 * signed head, kept so checkpoints stay resumable) and `head.json` (the latest).
 */
export const tableKeys = {
  entry: (root: string, key: string) => reservedKey(`${tablePrefix(root)}entries/`, key),
  pendingPrefix: (root: string) => `${tablePrefix(root)}pending/`,
  pending: (root: string, key: string, etag: string) =>
    reservedKey(`${tablePrefix(root)}pending/`, `${key}/${bareEtag(etag) || "deleted"}`),
  page: (root: string, name: string) => `${tablePrefix(root)}pages/${name}.json`,
  pins: (root: string, name: string) => `${tablePrefix(root)}pages/${name}.pins`,
  generation: (root: string, generation: number) => `${tablePrefix(root)}gen/${generation}.json`,
  head: (root: string) => `${tablePrefix(root)}head.json`,
  /** The public keys that verify every head, for clients that read the bucket without the edge. */
  publicKeys: () => `${RESERVED_PREFIX}table/v1/keys.json`,
};
