/**
 * A page-local shard rule: which objects of one table page open a virtual shard, decided by
 * each object alone (its key and size), never by the objects before it. Today's `groupShards`
 * cuts greedily by size over a run of listing positions, so one inserted object moves every
 * cut after it and only a scan of the run knows where a shard starts; with this rule a page's
 * shards are its own, the same in every generation that keeps the page's objects, and shard
 * identity is (page, shard in page) with no global scan.
 */
import type { ShardV1 } from "./schema/index.js";

/**
 * A key's place in [0, 1): FNV-1a over the UTF-16 units, then murmur3's finaliser so nearby
 * keys ("v1.mp4", "v2.mp4") land far apart. Pure JS, so workerd and Node agree.
 *
 * @example
 * keyUnit("gameplay/v1.mp4"); // the same value on every machine
 */
export function keyUnit(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

/**
 * Whether object `i` of a page opens a shard: the page's first object does; so does an object
 * whose key hashes below `size / shardBytes` (each byte is a cut with odds 1 / shardBytes, so
 * shards hold about `shardBytes` on average), and the object after one of `shardBytes` or more
 * (a large object is a shard of its own, as `groupShards` makes it).
 *
 * @example
 * opensShard(1, "gameplay/v1.mp4", 64 << 20, 200 << 20, 128 << 20); // true: the previous object is large
 */
export function opensShard(i: number, key: string, size: number, previousSize: number, shardBytes: number): boolean {
  return i === 0 || previousSize >= shardBytes || keyUnit(key) < size / shardBytes;
}

/**
 * The shards of one page's objects (in key order) by the page-local rule, ids from `firstId`
 * and `first` counted in the page.
 *
 * @example
 * pageShards((i) => keys[i]!, sizes, 128 << 20); // [{ id: 0, first: 0, count: 3, bytes: … }, …]
 */
export function pageShards(
  keyOf: (i: number) => string,
  sizes: ArrayLike<number>,
  shardBytes: number,
  firstId = 0,
): ShardV1[] {
  if (!(shardBytes > 0)) throw new RangeError(`Expected a positive shardBytes but received ${shardBytes}`);
  const shards: ShardV1[] = [];
  let current: ShardV1 | undefined;
  for (let i = 0; i < sizes.length; i++) {
    const size = sizes[i]!;
    if (!current || opensShard(i, keyOf(i), size, sizes[i - 1]!, shardBytes)) {
      current = { id: firstId + shards.length, first: i, count: 0, bytes: 0 };
      shards.push(current);
    }
    current.count++;
    current.bytes += size;
  }
  return shards;
}
