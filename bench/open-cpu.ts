/**
 * The client's CPU in open() against dataset size, phase by phase and in-process (no network):
 * reading and verifying a dataset table of N entries (the edge's own generation builder and
 * signature), listing its shards, planning its clips, and dealing one rank the first batch's
 * clips of the epoch order — and, side by side, what materialising the whole order and the
 * rank's partition (open() before the order streamed) costs instead of the last step. What bench/open-scale.ts measures end to end through the WAN, taken
 * apart, so each phase's growth with N reads directly.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-cpu.js [--sizes 1000,50000,200000] [--rounds 5] [--pins-inside] [--json]
 *
 * `--pins-inside`: pages that hold their etags (format 2's way), against pins apart (what the edge writes).
 */
import { generateKeyPairSync } from "node:crypto";
import { parseArgs } from "node:util";
import { buildGeneration } from "../common/dataset-table/generation.js";
import { tableShards } from "../common/dataset-table/listing.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import type { TableEntryV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { readTable, type TableStore } from "../common/table-client.js";
import { resolveOptions } from "../sdk/internal.js";
import type { IndexCache } from "../sdk/pipeline/index-cache.js";
import { planDataset } from "../sdk/pipeline/planner.js";
import { RankClips } from "../sdk/sampler/rank-clips.js";
import { partition } from "../sdk/sampler/partition.js";
import { epochOrder, epochStream } from "../sdk/sampler/shuffle.js";
import type { DatasetListing } from "../sdk/source/source.js";
import { PositionSet } from "../sdk/state/checkpoint.js";
import { syntheticEntry } from "./synthetic-table.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,50000,200000" },
    rounds: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
    "pins-inside": { type: "boolean", default: false },
  },
});

/** N small videos as open-scale seeds them. */
function entries(n: number): TableEntryV1[] {
  return Array.from({ length: n }, (_, i) => syntheticEntry(`scale/o-${String(i).padStart(7, "0")}.mp4`, i));
}

async function table(n: number): Promise<{ store: TableStore; keys: ReturnType<typeof publicKeys> }> {
  const signer = await manifestSigner(
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  );
  const { head, pages } = await buildGeneration(undefined, new Map(entries(n).map((e) => [e.key, e])), async () => [], {
    root: "scale",
    shardBytes: DEFAULT_SHARD_TARGET_BYTES,
    now: 0,
    pinsApart: !values["pins-inside"],
  });
  const signed = await signJson(head, signer);
  const bodies = new Map(
    await Promise.all(
      pages.map(
        async (p) =>
          [
            p.name,
            new Uint8Array(
              await new Response(
                new Blob([p.gz as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream("gzip")),
              ).arrayBuffer(),
            ),
          ] as const,
      ),
    ),
  );
  return { store: { head: async () => signed, page: async (name) => bodies.get(name)! }, keys: publicKeys([signer]) };
}

/** One open() of the table, phase by phase (ms). */
async function once(store: TableStore, keys: ReturnType<typeof publicKeys>): Promise<Record<string, number>> {
  const o = resolveOptions({ frames: 4, batch: 8, seed: 1, rank: 0, world: 1 });
  const t0 = performance.now();
  const t = (await readTable(store, Promise.resolve(keys), "scale"))!;
  const t1 = performance.now();
  // As EdgeSource lists a table: the columns are the object list.
  const shards = tableShards(t.entries.columns.size, t.head.shardBytes).map((s) => ({
    objects: Array.from({ length: s.count }, (_, i) => s.first + i),
  }));
  const listing: DatasetListing = {
    objects: t.entries,
    shards,
    entries: t.entries,
    generation: t.head.generation,
    digest: t.digest,
  };
  const t2 = performance.now();
  // The table path reads no index.
  const { plan } = await planDataset(listing, undefined as unknown as IndexCache, o);
  const t3 = performance.now();
  const mine = new RankClips(
    epochStream(plan, o.shuffle, { seed: 1, epoch: 0, buffer: o.shuffleBuffer }),
    new PositionSet(plan.total),
    0,
    1,
  );
  for (let i = 0; i < Math.min(mine.length, o.batch + o.prefetch * 4); i++) mine.at(i);
  const t4 = performance.now();
  // What open() did before the order streamed: the whole order, then this rank's partition of it.
  const order = epochOrder(plan, o.shuffle, { seed: 1, epoch: 0, buffer: o.shuffleBuffer });
  partition(new PositionSet(plan.total).remaining(), 0, 1).map((position) => ({ position, ref: order[position]! }));
  const t5 = performance.now();
  return {
    read_table_ms: t1 - t0,
    listing_ms: t2 - t1,
    plan_ms: t3 - t2,
    first_clips_ms: t4 - t3,
    open_ms: t4 - t0,
    materialised_ms: t5 - t4,
    clips: plan.total,
  };
}

const rows = [];
for (const n of values.sizes.split(",").map(Number)) {
  const { store, keys } = await table(n);
  await once(store, keys);
  const runs: Record<string, number>[] = [];
  for (let r = 0; r < Number(values.rounds); r++) runs.push(await once(store, keys));
  const pick = (k: string) => Number(median(runs.map((x) => x[k]!)).toFixed(1));
  rows.push({
    objects: n,
    clips: runs[0]!.clips,
    read_table_ms: pick("read_table_ms"),
    listing_ms: pick("listing_ms"),
    plan_ms: pick("plan_ms"),
    first_clips_ms: pick("first_clips_ms"),
    open_ms: pick("open_ms"),
    materialised_ms: pick("materialised_ms"),
    us_per_object: Number(((median(runs.map((x) => x.open_ms!)) * 1000) / n).toFixed(2)),
  });
}
if (values.json) process.stdout.write(`${JSON.stringify({ rows })}\n`);
else
  for (const r of rows)
    process.stdout.write(
      `${r.objects} objects (${r.clips} clips): read table ${r.read_table_ms} ms, listing ${r.listing_ms} ms, plan ${r.plan_ms} ms, first clips ${r.first_clips_ms} ms = open ${r.open_ms} ms (${r.us_per_object} µs per object); the materialised order instead of the first clips: ${r.materialised_ms} ms\n`,
    );
