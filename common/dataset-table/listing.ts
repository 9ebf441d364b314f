import type { ShardV1 } from "../schema/index.js";
import { groupShards, MAX_MANIFEST_PAGE } from "../shards.js";

/**
 * The virtual shards of a dataset listed from its table, exactly as the manifest groups them:
 * one group per run of MAX_MANIFEST_PAGE objects (one R2 list call, one manifest page), ids
 * continuing across runs. Planning from the table and from the manifest then agrees.
 *
 * @example
 * const shards = tableShards(table.entries.columns.size, head.shardBytes);
 */
export function tableShards(sizes: Float64Array, shardBytes: number): ShardV1[] {
  const shards: ShardV1[] = [];
  for (let first = 0; first < sizes.length; first += MAX_MANIFEST_PAGE) {
    for (const s of groupShards(sizes.subarray(first, first + MAX_MANIFEST_PAGE), shardBytes, shards.length))
      shards.push({ ...s, first: s.first + first });
  }
  return shards;
}
