/**
 * The page-local shard rule of table generations (head format 2): a virtual shard starts at
 * each page's first object and before every object whose key hashes below
 * `size / targetBytes` (as a fraction of 2^32). Each cut depends only on the object itself
 * (its key and size) and the page boundary, never on the objects before it, so:
 * - shards never cross a page, and the publisher states each page's shard count in its
 *   directory without global state;
 * - inserting or removing an object changes only the shard it falls into (it may start or end
 *   one there), never a shard of another page or further along its own;
 * - a shard's expected bytes are `targetBytes` away from page edges (an object of size s cuts
 *   with probability s / targetBytes, so cuts come once per `targetBytes` of objects on average);
 *   an object at or past the target always starts a shard.
 *
 * groupShards (shards.ts) remains the greedy rule of manifests and format-1 tables.
 */

/** 2^32, the range of keyHash. */
const SPAN = 4_294_967_296;

/**
 * A 32-bit hash of an object key, over its UTF-16 units (the same in workerd, Node and the
 * browser): FNV-1a with murmur3's finaliser, so that nearby keys ("…-000017", "…-000018")
 * spread over the whole range.
 *
 * @example
 * keyHash("gameplay/a.mp4"); // 0 ≤ h < 2^32
 */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return mix(h);
}

/**
 * keyHash of the key held as UTF-8 in `bytes[from, to)`, without making the string where it is
 * ASCII (each byte is then its one UTF-16 unit): what a page's columns give for each of its
 * objects when its shards are cut.
 *
 * @example
 * keyHashUtf8(new TextEncoder().encode("gameplay/a.mp4"), 0, 14) === keyHash("gameplay/a.mp4"); // true
 */
export function keyHashUtf8(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) {
    const b = bytes[i]!;
    if (b >= 0x80) return keyHash(new TextDecoder().decode(bytes.subarray(from, to)));
    h = Math.imul(h ^ b, 0x01000193);
  }
  return mix(h);
}

/** The final avalanche of keyHash (murmur3's fmix32), over an FNV-1a state. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Whether an object of `size` whose key hashes to `hash` starts a shard at `targetBytes` (cutsBefore's test). */
function cutsAt(hash: number, size: number, targetBytes: number): boolean {
  if (!(targetBytes > 0)) throw new RangeError(`Expected a positive shard target but received ${targetBytes}`);
  return hash < (size / targetBytes) * SPAN;
}

/**
 * Whether a shard starts before this object (inside a page; a page's first object always
 * starts one): its key hashes below `size / targetBytes` of the hash range.
 *
 * @example
 * cutsBefore("gameplay/a.mp4", 256 << 20, 128 << 20); // true: an object past the target always starts a shard
 */
export function cutsBefore(key: string, size: number, targetBytes: number): boolean {
  return cutsAt(keyHash(key), size, targetBytes);
}

/** What the rule reads of a page: its objects' keys and sizes, in key order. */
export interface ShardSource {
  readonly length: number;
  key(i: number): string;
  size(i: number): number;
  /** keyHash of key(i), where the source has it without the string (keyHashUtf8). */
  hash?(i: number): number;
}

/**
 * The shards of one page as [first, count, bytes] runs of its objects (indices within the
 * page), under the page-local rule.
 *
 * @example
 * pageShards({ length: 3, key: (i) => keys[i], size: (i) => sizes[i] }, 128 << 20);
 * // [{ first: 0, count: 2, bytes: … }, { first: 2, count: 1, bytes: … }]
 */
export function pageShards(page: ShardSource, targetBytes: number): { first: number; count: number; bytes: number }[] {
  const shards: { first: number; count: number; bytes: number }[] = [];
  for (let i = 0; i < page.length; i++) {
    const size = page.size(i);
    if (i === 0 || cutsAt(page.hash ? page.hash(i) : keyHash(page.key(i)), size, targetBytes))
      shards.push({ first: i, count: 0, bytes: 0 });
    const s = shards[shards.length - 1]!;
    s.count++;
    s.bytes += size;
  }
  return shards;
}

/**
 * How many shards a page of these objects has under the rule (what a directory records per page).
 *
 * @example
 * countPageShards(entries.map((e) => e.key), entries.map((e) => e.size), 128 << 20); // 3
 */
export function countPageShards(keys: readonly string[], sizes: readonly number[], targetBytes: number): number {
  let n = keys.length > 0 ? 1 : 0;
  for (let i = 1; i < keys.length; i++) if (cutsBefore(keys[i]!, sizes[i]!, targetBytes)) n++;
  return n;
}
