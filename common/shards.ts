import type { ShardV1 } from "./schema/index.js";

/** R2 returns at most 1000 keys per list call; one manifest page is one list call. */
export const MAX_MANIFEST_PAGE = 1000;

/** 128 MiB: large enough that a shard amortises a request, small enough to shuffle well. */
export const DEFAULT_SHARD_TARGET_BYTES = 128 * 1024 * 1024;

/**
 * Groups objects (in listing order) into virtual shards: contiguous runs that close as soon
 * as they reach `targetBytes`. An object larger than the target is a shard of its own; no
 * object is split or rewritten.
 *
 * @example
 * groupShards([100, 200, 50], 250, 0); // [{ id: 0, first: 0, count: 2, bytes: 300 }, { id: 1, first: 2, count: 1, bytes: 50 }]
 */
export function groupShards(sizes: ArrayLike<number>, targetBytes: number, firstId: number): ShardV1[] {
  const shards: ShardV1[] = [];
  let current: ShardV1 | undefined;
  for (let i = 0; i < sizes.length; i++) {
    current ??= { id: firstId + shards.length, first: i, count: 0, bytes: 0 };
    current.count++;
    current.bytes += sizes[i]!;
    if (current.bytes >= targetBytes) {
      shards.push(current);
      current = undefined;
    }
  }
  if (current) shards.push(current);
  return shards;
}
