/**
 * Table pages a lazy open() keeps while a rank streams, against dataset size: the order is
 * walked as the pipeline walks it (sdk/lazy-open.ts: LazyTable, LazyPlan, the order through
 * SettledPages, RankClips for rank 0 of 1), each clip settled `lag` clips after it is dealt (the
 * clips a pipeline holds unsettled: about 5 × prefetch + batch), over the first `--clips` clips
 * of the epoch, each dealt clip's object asked for as the pipeline asks. Per size and table cache cap (`tableCacheBytes`), side by side in one run: the
 * pages and directory pages read (a re-read after the cap dropped one included), the most kept
 * at once, the most bytes of each kind the table's cache held (never over the cap), and the heap
 * grown over the walk (the table's pages, the plan's and the deal's clips).
 * Synthetic entries through the publisher's page codec (pins apart), served from memory.
 *
 * `--keep`: the deal keeps every clip it dealt (as before it forgot delivered ones).
 * `--caps`: the caps to walk each size under (default: the option's default, 64 MiB).
 *
 *   npx tsc -p bench/tsconfig.json && node --expose-gc dist/bench/open-lazy-resident.js [--sizes 100000,1000000] [--clips 200000] [--caps 67108864,2097152] [--keep] [--json]
 */
import { generateKeyPairSync } from "node:crypto";
import { parseArgs } from "node:util";
import { LazyTable } from "../common/lazy-table.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import { resolveOptions } from "../sdk/internal.js";
import { lazyOpen } from "../sdk/lazy-open.js";
import { RankClips } from "../sdk/sampler/rank-clips.js";
import { pagedStream } from "../sdk/sampler/shuffle.js";
import { pageDigest } from "../sdk/source/page-check.js";
import { objectOf } from "../sdk/source/source.js";
import { PositionSet } from "../sdk/state/checkpoint.js";
import { memoryStore, synthesizeInMemory } from "./synthetic-table.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "100000,1000000" },
    clips: { type: "string", default: "200000" },
    json: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    caps: { type: "string" },
  },
});
const o = resolveOptions({ frames: 16 }, {});
const lag = 5 * o.prefetch + o.batch;
const signer = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const keys = Promise.resolve(publicKeys([signer]));
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

async function measure(
  table: Awaited<ReturnType<typeof synthesizeInMemory>>,
  n: number,
  clips: number,
  forget: boolean,
  cap: number,
) {
  const { head, stored, pins } = table;
  const signed = await signJson(head, signer);
  const store = memoryStore(signed, { stored, pins });
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const lazy = (await LazyTable.open(store, keys, "scale", undefined, pageDigest))!;
  const { paged, settled, listing } = lazyOpen(lazy, { ...o, tableCacheBytes: cap }, () => {});
  const order = settled.track(pagedStream(paged, o.shuffle, { seed: 1, epoch: 0, buffer: o.shuffleBuffer })!);
  const mine = new RankClips(order, new PositionSet(Infinity), 0, 1);
  let dealt = 0;
  for (; dealt < clips; dealt++) {
    await mine.ready(dealt);
    const clip = mine.at(dealt);
    if (!clip) break;
    // Its object, as the pipeline asks for it (its page read again where the cap dropped it).
    if ((await objectOf(listing.objects, clip.ref.object)) === undefined) throw new Error("a dealt clip has no object");
    if (dealt >= lag) {
      const position = mine.at(dealt - lag)!.position;
      // As the Dataset does once a batch is delivered (or, with --keep, not: the deal keeps every clip).
      if (forget) mine.forget(position);
      settled.settled(position);
    }
  }
  gc();
  const heapGrown = process.memoryUsage().heapUsed - heapBefore;
  // Alive through the measure: the deal keeps what it has not forgotten.
  if (mine.at(dealt - 1) === undefined && dealt > 0) throw new Error("the deal lost its last clip");
  const held = lazy.cache.stats();
  return {
    objects: n,
    cap,
    pages: lazy.pageCount,
    directories: head.version === 2 ? head.directories.length : 0,
    clips: dealt,
    pagesRead: lazy.read.length,
    directoryReads: lazy.list.directoryReads,
    peakKept: lazy.peakPages,
    keptAtEnd: lazy.keptPages.length,
    peakPageBytes: held.peak_page_bytes,
    peakDirectoryBytes: held.peak_directory_bytes,
    peakBytes: held.peak_bytes,
    rereadPages: held.reread_pages,
    rereadDirectories: held.reread_directory_pages,
    heapMiB: heapGrown / 2 ** 20,
  };
}

const caps = (values.caps ?? String(o.tableCacheBytes)).split(",").map(Number);
const rows = [];
for (const n of values.sizes.split(",").map(Number)) {
  const table = await synthesizeInMemory(n);
  for (const cap of caps) rows.push(await measure(table, n, Number(values.clips), !values.keep, cap));
}
if (values.json) console.log(JSON.stringify({ lag, buffer: o.shuffleBuffer, rows }));
else {
  const kib = (b: number) => (b / 1024).toFixed(0);
  console.log(
    `shard-buffer, buffer ${o.shuffleBuffer}, clips settled ${lag} behind${values.keep ? ", the deal keeping every clip" : ""}; heap grown over the walk (gc'd); KiB held: most at once in the table's cache`,
  );
  console.log(
    "objects     cap KiB  pages  dirs  clips walked  pages read  dirs read  most kept  kept at end  page KiB  dir KiB  both KiB  heap MiB",
  );
  for (const r of rows)
    console.log(
      `${String(r.objects).padEnd(10)} ${kib(r.cap).padStart(8)} ${String(r.pages).padStart(6)} ${String(r.directories).padStart(5)} ${String(r.clips).padStart(13)} ${String(r.pagesRead).padStart(11)} ${String(r.directoryReads).padStart(10)} ${String(r.peakKept).padStart(10)} ${String(r.keptAtEnd).padStart(12)} ${kib(r.peakPageBytes).padStart(9)} ${kib(r.peakDirectoryBytes).padStart(8)} ${kib(r.peakBytes).padStart(9)} ${r.heapMiB.toFixed(1).padStart(9)}`,
    );
}
