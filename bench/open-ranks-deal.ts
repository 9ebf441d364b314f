/**
 * The client side of bench/open-ranks.ts without the edge: `--ranks` ranks (rank r of world N)
 * in one process, each with its own LazyTable over one synthesized table served from memory
 * (synthesizeInMemory: the publisher's page codec, pins apart) and its own lazy plan, deal
 * (StreamedGopClips, shard-buffer) and SettledPages, ready their first 8 clips at once. Reports
 * the wall and CPU time of the whole, the pages each rank read and the heap grown: what the deal
 * and the pages it plans cost when every rank runs in one process.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-ranks-deal.js [--objects 100000] [--ranks 512]
 */
import { generateKeyPairSync } from "node:crypto";
import { parseArgs } from "node:util";
import { LazyTable } from "../common/lazy-table.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import { resolveOptions } from "../sdk/internal.js";
import { lazyOpen } from "../sdk/lazy-open.js";
import { StreamedGopClips } from "../sdk/sampler/streamed-gop-clips.js";
import { pagedStream } from "../sdk/sampler/shuffle.js";
import { pageDigest } from "../sdk/source/page-check.js";
import { PositionSet } from "../sdk/state/checkpoint.js";
import { memoryStore, synthesizeInMemory } from "./synthetic-table.js";

const { values } = parseArgs({
  options: { objects: { type: "string", default: "100000" }, ranks: { type: "string", default: "512" } },
});
const n = Number(values.objects);
const world = Number(values.ranks);
const o = resolveOptions({ frames: 16, world, rank: 0 }, {});
const signer = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const keys = Promise.resolve(publicKeys([signer]));
const { head, stored, pins } = await synthesizeInMemory(n);
const signed = await signJson(head, signer);
const store = memoryStore(signed, { stored, pins }, 1);
const keep: unknown[] = [];
// Heap grown over the whole, not gc'd: what the ranks hold plus what is not collected yet.
const h0 = process.memoryUsage().heapUsed;
const t0 = performance.now();
const c0 = process.cpuUsage();
let pages = 0;
await Promise.all(
  Array.from({ length: world }, async (_, rank) => {
    const table = (await LazyTable.open(store, keys, "scale", undefined, pageDigest))!;
    const { paged, settled } = lazyOpen(table, o, () => {});
    const mine = new StreamedGopClips(
      () => settled.track(pagedStream(paged, o.shuffle, { seed: 1, epoch: 0, buffer: o.shuffleBuffer })!),
      new PositionSet(Infinity),
      paged,
      rank,
      world,
      undefined,
      settled,
    );
    for (let i = 0; i < 8; i++) {
      await mine.ready(i);
      mine.at(i);
    }
    pages += table.read.length;
    // Kept to the end, as the ranks of open-ranks keep their datasets open.
    keep.push(mine, table);
  }),
);
const c = process.cpuUsage(c0);
console.log(
  JSON.stringify({
    world,
    ms: Math.round(performance.now() - t0),
    cpu: Math.round((c.user + c.system) / 1000),
    pagesPerRank: pages / world,
    heapMiB: Math.round((process.memoryUsage().heapUsed - h0) / 2 ** 20),
  }),
);
