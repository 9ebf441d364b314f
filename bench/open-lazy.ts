/**
 * The client's open() and first batch against dataset size when the plan reads table pages as
 * the epoch order reaches them (LazyPlan, epoch order 6), in-process: pages are synthesized on
 * demand through the real page codec (gzip, as stored) and decoded as the client decodes them,
 * planned (clip starts and GOP runs as the planner cuts them), and cut into shards by the
 * page-local rule (common/page-shards.ts). Per size, side by side in one run:
 *  - open: what open() does before the first clip (the page index from the head's counts,
 *    the order and this rank's deal set up), CPU ms;
 *  - first batch: the rank's first `batch` clips readied (their window's pages read, inflated,
 *    decoded and planned; the next window's pages fetched ahead, not read), CPU ms and its ratio
 *    to the smallest size; pages read, pages fetched ahead, and their bytes on the wire (gzip);
 *    entries decoded (their offsets filled and checked: a page of format 4 a shard at a time,
 *    as the order reaches its shards; one of format 3, `--page-format 3`, whole); and of the
 *    first batch's CPU, what inflating its pages took and what decoding and planning them
 *    (header, columns, shards; not their objects, planned as the order reaches them) took.
 * The head is not read here: its bytes are reported apart by bench/table-head.ts. The sizes
 * take turns within each round, so the JIT's warm-up and the machine's load fall on all of them.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-lazy.js [--sizes 1000,1000000,10000000] [--world 8] [--batch 8] [--rounds 3] [--page-format 4] [--json]
 */
import { parseArgs } from "node:util";
import { gzip } from "../common/dataset-table/digest.js";
import type { EntryColumns } from "../common/dataset-table/entry-columns.js";
import { decodePageBytes } from "../common/dataset-table/page-codec.js";
import { PAGE_TARGET } from "../common/dataset-table/generation.js";
import { resolveOptions } from "../sdk/internal.js";
import { planTablePage } from "../sdk/pipeline/planner.js";
import { LazyPlan } from "../sdk/sampler/paged-plan.js";
import { RankClips } from "../sdk/sampler/rank-clips.js";
import { pagedStream } from "../sdk/sampler/shuffle.js";
import { StreamedGopClips } from "../sdk/sampler/streamed-gop-clips.js";
import { inflatePage } from "../sdk/source/page-check.js";
import { PositionSet } from "../sdk/state/checkpoint.js";
import { encodePageBytes } from "../common/dataset-table/page-codec.js";
import { median } from "./stats.js";
import { syntheticEntry } from "./synthetic-table.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,1000000,10000000" },
    world: { type: "string", default: "8" },
    batch: { type: "string", default: "8" },
    rounds: { type: "string", default: "3" },
    "page-format": { type: "string", default: "4" },
    json: { type: "boolean", default: false },
  },
});
const world = Number(values.world);
const batch = Number(values.batch);
/** The default sampling: exact 16-frame clips, hop 16 (synthetic videos: 24 frames, a keyframe every 6). */
const sampling = resolveOptions({ frames: 16 }, {});
/** Shards of 128 KiB of these 20 kB objects: about 6 to a shard, as 128 MiB shards of 20 MB videos. */
const SHARD_BYTES = 128 * 1024;
/** Format 4 pages store their shards (at SHARD_BYTES); format 3 pages are cut by the reader. */
const sharded = values["page-format"] === "4";
if (!sharded && values["page-format"] !== "3")
  throw new RangeError(`Expected --page-format 3 or 4 but received ${values["page-format"]}`);

/** Page k of an n-object table, as stored (gzip of the page codec's bytes, etags apart). */
async function storedPage(n: number, k: number): Promise<Uint8Array> {
  const first = k * PAGE_TARGET;
  const entries = Array.from({ length: Math.min(PAGE_TARGET, n - first) }, (_, j) =>
    syntheticEntry(`scale/o-${String(first + j).padStart(8, "0")}.mp4`, first + j),
  );
  return gzip(encodePageBytes("scale", entries, { apart: true, shardBytes: sharded ? SHARD_BYTES : undefined }));
}

interface Row {
  objects: number;
  pages: number;
  openMs: number;
  firstBatchMs: number;
  /** Pages read (inflated, decoded, planned) by the first batch. */
  pagesRead: number;
  /** Pages of the next window fetched ahead, not read. */
  pagesAhead: number;
  pageBytes: number;
  /** Entries decoded by the first batch, of those its pages hold. */
  entriesDecoded: number;
  entriesRead: number;
  /** CPU ms of the first batch inflating its pages, and decoding and planning them (their shards; objects apart). */
  inflateMs: number;
  pageMs: number;
}

/**
 * Page k of `n` read as the client reads it: `fetch` takes its stored bytes (what a request
 * brings), `read` inflates, decodes and plans them. `stored` holds the pages as the bucket does.
 */
function reader(
  n: number,
  stored: Map<number, Uint8Array>,
  wire: { bytes: number },
  decoded: EntryColumns[],
  phases: { inflate: number; page: number },
) {
  const fetched = new Map<number, Uint8Array>();
  const fetch = (k: number) => {
    const gz = stored.get(k);
    if (!gz) return;
    wire.bytes += gz.byteLength;
    fetched.set(k, gz);
  };
  const read = async (k: number) => {
    let gz = fetched.get(k);
    fetched.delete(k);
    if (!gz) {
      gz = stored.get(k) ?? (await storedPage(n, k));
      stored.set(k, gz);
      wire.bytes += gz.byteLength;
    }
    // Each phase timed where it runs synchronously (inflatePage's body does, before its promise returns).
    const t0 = process.cpuUsage();
    const inflating = inflatePage(gz);
    phases.inflate += cpuMs(process.cpuUsage(t0));
    const raw = await inflating;
    const t1 = process.cpuUsage();
    const { entries } = decodePageBytes(raw);
    decoded.push(entries);
    const { objects, shards } = planTablePage(entries, k * PAGE_TARGET, sampling, SHARD_BYTES, []);
    phases.page += cpuMs(process.cpuUsage(t1));
    return { objects, shards };
  };
  return { fetch, read };
}

/** open() and the first batch over a lazy plan of `n` objects; pages synthesized on the way in are not counted. */
async function firstBatch(n: number, stored: Map<number, Uint8Array>): Promise<Row> {
  const pageCount = Math.ceil(n / PAGE_TARGET);
  const wire = { bytes: 0 };
  const cpu0 = process.cpuUsage();
  const counts = new Float64Array(pageCount);
  for (let k = 0; k < pageCount; k++) counts[k] = Math.min(PAGE_TARGET, n - k * PAGE_TARGET);
  const decoded: EntryColumns[] = [];
  const phases = { inflate: 0, page: 0 };
  const { fetch, read } = reader(n, stored, wire, decoded, phases);
  const plan = new LazyPlan(counts, read, undefined, fetch);
  const params = { seed: 1, epoch: 0, buffer: 256 };
  const mine =
    world > 1
      ? new StreamedGopClips(
          () => pagedStream(plan, "shard-buffer", params)!,
          new PositionSet(Infinity),
          plan,
          3,
          world,
        )
      : new RankClips(pagedStream(plan, "shard-buffer", params)!, new PositionSet(Infinity), 0, 1);
  const open = process.cpuUsage(cpu0);
  const cpu1 = process.cpuUsage();
  for (let i = 0; i < batch; i++) {
    await mine.ready(i);
    mine.at(i);
  }
  const first = process.cpuUsage(cpu1);
  const pagesRead = plan.asked.length;
  const entriesDecoded = decoded.reduce((s, e) => s + e.decoded, 0);
  const entriesRead = decoded.reduce((s, e) => s + e.length, 0);
  // The next window, fetched ahead while the first is consumed: its bytes count (synthesized here the first time).
  for (const k of plan.prefetched)
    if (!stored.has(k)) {
      stored.set(k, await storedPage(n, k));
      wire.bytes += stored.get(k)!.byteLength;
    }
  return {
    objects: n,
    pages: pageCount,
    openMs: cpuMs(open),
    firstBatchMs: cpuMs(first),
    pagesRead,
    pagesAhead: plan.prefetched.length,
    pageBytes: wire.bytes,
    entriesDecoded,
    entriesRead,
    inflateMs: phases.inflate,
    pageMs: phases.page,
  };
}

async function once(n: number): Promise<Row> {
  const stored = new Map<number, Uint8Array>();
  // Untimed: synthesizes the pages this seed's first batch reads (the bucket's side).
  await firstBatch(n, stored);
  return firstBatch(n, stored);
}

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
const sizes = values.sizes.split(",").map(Number);
const runs: Row[][] = sizes.map(() => []);
for (let r = 0; r < Number(values.rounds); r++) for (const [i, n] of sizes.entries()) runs[i]!.push(await once(n));
const rows: Row[] = runs.map((of) => ({
  ...of[0]!,
  openMs: median(of.map((x) => x.openMs)),
  firstBatchMs: median(of.map((x) => x.firstBatchMs)),
  inflateMs: median(of.map((x) => x.inflateMs)),
  pageMs: median(of.map((x) => x.pageMs)),
}));
if (values.json) console.log(JSON.stringify({ world, batch, rows }));
else {
  const base = rows[0]!;
  console.log(`world ${world}, rank 3, first batch of ${batch} clips; CPU ms on one core (median of ${values.rounds})`);
  console.log(
    `page format ${values["page-format"]}\nobjects     pages  open ms  first batch ms  × smallest  of which inflate, pages ms  pages read  fetched ahead  page KiB  entries decoded`,
  );
  for (const r of rows)
    console.log(
      `${String(r.objects).padEnd(10)} ${String(r.pages).padStart(6)} ${r.openMs.toFixed(2).padStart(8)} ${r.firstBatchMs.toFixed(2).padStart(15)} ${(r.firstBatchMs / base.firstBatchMs).toFixed(2).padStart(11)} ${`${r.inflateMs.toFixed(2)}, ${r.pageMs.toFixed(2)}`.padStart(26)} ${String(r.pagesRead).padStart(11)} ${String(r.pagesAhead).padStart(14)} ${(r.pageBytes / 1024).toFixed(1).padStart(9)} ${`${r.entriesDecoded} of ${r.entriesRead}`.padStart(16)}`,
    );
}
