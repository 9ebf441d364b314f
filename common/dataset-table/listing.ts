import type { ShardV1, TableEntryV1 } from "../schema/index.js";
import { groupShards, MAX_MANIFEST_PAGE } from "../shards.js";

/**
 * The virtual shards of a dataset listed from its table, exactly as the manifest groups them:
 * one group per run of MAX_MANIFEST_PAGE objects (one R2 list call, one manifest page), ids
 * continuing across runs. Planning from the table and from the manifest then agrees.
 *
 * @example
 * const shards = tableShards(entries, head.shardBytes);
 */
export function tableShards(entries: readonly Pick<TableEntryV1, "size">[], shardBytes: number): ShardV1[] {
  const shards: ShardV1[] = [];
  for (let first = 0; first < entries.length; first += MAX_MANIFEST_PAGE) {
    const page = entries.slice(first, first + MAX_MANIFEST_PAGE);
    for (const s of groupShards(
      page.map((e) => e.size),
      shardBytes,
      shards.length,
    ))
      shards.push({ ...s, first: s.first + first });
  }
  return shards;
}
