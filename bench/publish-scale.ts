/**
 * The table publisher against table size (head format 2: the head names directory pages of up
 * to DIRECTORY_MAX pages): one generation of MAX_CHANGES_PER_GENERATION listed changes applied
 * to a table of P pages of 1000 entries, with the code the Worker's publish consumer runs
 * (parse the signed head and the changes the marks carry, directoriesInReach and chooseChanges,
 * read the directory pages and pages the changes fall into, buildGeneration: merge, split,
 * gzip and digest the pages and directory pages, then sign the head), timed in Node's V8 with
 * synthetic entries. Two arrival patterns: "append" (keys after every listed one: new uploads
 * of a growing dataset, and `ec index` of a filled bucket, whose pending marks list in key
 * order) and "spread" (the listed changes all over the table, the worst case). R2 operations
 * per generation are counted (puts: what it writes); the wall time to publish N objects from
 * nothing sums the generations over the table's growth.
 *
 * Then the same objects arriving spread at random at `--rate` objects a second (5,000: the most
 * Cloudflare Queues deliver from one queue) through the publisher before the sweep and now
 * (bench/publish-arrivals.ts), with the CPU fitted to the generations measured.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/publish-scale.js [--pages 1,10,100,1000,10000] [--rounds 3] [--r2-ms 25] [--rate 5000,500] [--json]
 */
import { generateKeyPairSync } from "node:crypto";
import { parseArgs } from "node:util";
import { chooseChanges, directoriesInReach } from "../common/dataset-table/budget.js";
import { gunzip } from "../common/dataset-table/digest.js";
import {
  cutRuns,
  decodeDirectory,
  DIRECTORY_TARGET,
  directoryParts,
  encodeDirectory,
} from "../common/dataset-table/directory.js";
import {
  buildGeneration,
  encodePage,
  headOf,
  PAGE_TARGET,
  pageOf,
  pageSummary,
} from "../common/dataset-table/generation.js";
import { decodePageBytes } from "../common/dataset-table/page-codec.js";
import { manifestSigner, signJson, type ManifestSigner } from "../common/manifest-sign.js";
import { countPageShards } from "../common/page-shards.js";
import { SignedManifestV1, TableEntryV1, TableHeadV1, type TablePageRefV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { seededRng } from "../sdk/sampler/rng.js";
import { syntheticEntry } from "./synthetic-table.js";
import { median } from "./stats.js";
import { fitCost, simulateArrivals } from "./publish-arrivals.js";

const { values } = parseArgs({
  options: {
    pages: { type: "string", default: "1,10,100,1000,10000" },
    rounds: { type: "string", default: "3" },
    "r2-ms": { type: "string", default: "25" },
    totals: { type: "string", default: "100000,1000000,10000000" },
    /** Objects a second arriving spread at random for the simulated publish (Cloudflare Queues: 5,000 messages/s a queue). */
    rate: { type: "string", default: "5000,500" },
    json: { type: "boolean", default: false },
  },
});
/** edge/table/publish.ts's constants (not imported: edge/ builds against the Worker's types). */
const LIST_CALLS = 10;
const MAX_CHANGES_PER_GENERATION = LIST_CALLS * 1000;
const GENERATION_SUBREQUESTS = 400;
/** Per list call a list and a delete, one list to wrap the sweep, the sweep's get and put, the head read and three puts. */
const FIXED = 2 * LIST_CALLS + 7;
/** Page p holds the even slots; a spread change takes an odd slot of some page, an append a page after the last. */
const keyOf = (p: number, slot: number) => `scale/o-${String(p).padStart(6, "0")}-${String(slot).padStart(5, "0")}.mp4`;
const pageEntries = (p: number) =>
  Array.from({ length: PAGE_TARGET }, (_, s) => syntheticEntry(keyOf(p, 2 * s), p * PAGE_TARGET + s));

interface Measured {
  cpu_ms: number;
  pages_read: number;
  pages_written: number;
  directories_read: number;
  directories_written: number;
  head_kb: number;
  directory_kb: number;
  subrequests: number;
  puts: number;
  /** Of the listed changes, those the budget took into this generation. */
  changes: number;
}

/** The previous generation of `pages` full pages: its head and directory pages (bodies), refs only for pages. */
async function previousOf(pages: number, signer: ManifestSigner) {
  const one = pageEntries(0);
  const summary = {
    ...pageSummary(one),
    shards: countPageShards(
      one.map((e) => e.key),
      one.map((e) => e.size),
      DEFAULT_SHARD_TARGET_BYTES,
    ),
  };
  const refs: TablePageRefV1[] = Array.from({ length: pages }, (_, p) => ({
    name: `1-${p}`,
    first: keyOf(p, 0),
    last: keyOf(p, 2 * (PAGE_TARGET - 1)),
    count: PAGE_TARGET,
    bytes: PAGE_TARGET * 20_048,
    sha256: "x".repeat(43),
    ...summary,
    pins: "y".repeat(43),
  }));
  const dirs = await Promise.all(
    cutRuns(refs, directoryParts(pages, true)).map((run, d) => encodeDirectory("scale", `1-${pages + d}`, run)),
  );
  const head = headOf(
    "scale",
    1,
    0,
    DEFAULT_SHARD_TARGET_BYTES,
    dirs.map((d) => d.ref),
  );
  return {
    head,
    bodies: new Map(dirs.map((d) => [d.ref.name, d.gz])),
    signed: JSON.stringify(await signJson(head, signer)),
  };
}

/** One generation of MAX_CHANGES_PER_GENERATION listed changes on a table of `pages` full pages. */
async function generation(
  pages: number,
  pattern: "append" | "spread",
  signer: ManifestSigner,
  round: number,
): Promise<Measured> {
  const rng = seededRng(round, pages, pattern);
  const marks: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < MAX_CHANGES_PER_GENERATION; i++) {
    const [p, slot] =
      pattern === "append"
        ? [pages + Math.floor(i / PAGE_TARGET), 2 * (i % PAGE_TARGET)]
        : [Math.floor(rng() * pages), 2 * Math.floor(rng() * PAGE_TARGET) + 1];
    const key = keyOf(p, slot);
    if (seen.has(key)) continue;
    seen.add(key);
    marks.push(JSON.stringify(syntheticEntry(key, 1e9 + i)));
  }
  const prev = await previousOf(pages, signer);
  // Bodies of the pages read, made when first read (R2 would return them): their making is not counted.
  const bodies = new Map<string, Uint8Array>(prev.bodies);
  let making = 0;
  const body = async (name: string) => {
    if (!bodies.has(name)) {
      const m0 = process.cpuUsage();
      bodies.set(
        name,
        (await encodePage("scale", pageEntries(Number(name.split("-")[1])), { shardBytes: DEFAULT_SHARD_TARGET_BYTES }))
          .gz,
      );
      const m = process.cpuUsage(m0);
      making += (m.user + m.system) / 1000;
    }
    return bodies.get(name)!;
  };
  // The pages the generation will read, made first: mergePages reads several at once, so making
  // them on first read would overlap the timed work and could not be subtracted from it.
  {
    const h = TableHeadV1.parse(JSON.parse(SignedManifestV1.parse(JSON.parse(prev.signed)).payload));
    const listedKeys = marks.map((m) => (JSON.parse(m) as { key: string }).key);
    const r = directoriesInReach(h, listedKeys, GENERATION_SUBREQUESTS - FIXED, DIRECTORY_TARGET);
    const ds = h.version === 2 ? h.directories : [];
    const refs = (
      await Promise.all(r.directories.map(async (d) => decodeDirectory(await gunzip(bodies.get(ds[d]!.name)!))))
    ).flat();
    const picked = chooseChanges(
      refs,
      r.keys.map((key) => ({ key, read: false })),
      GENERATION_SUBREQUESTS - FIXED - r.reserved,
      PAGE_TARGET,
      true,
    );
    if (refs.length > 0) for (const key of picked.keys) await body(refs[pageOf(refs, key)]!.name);
    making = 0;
  }
  let pagesRead = 0;
  let dirsRead = 0;
  const c0 = process.cpuUsage();
  // What publishTable and writeGeneration compute, in order, with R2 replaced by the bytes it would return.
  const head = TableHeadV1.parse(JSON.parse(SignedManifestV1.parse(JSON.parse(prev.signed)).payload));
  const listed = new Map(marks.map((m) => TableEntryV1.parse(JSON.parse(m))).map((e) => [e.key, e]));
  const reach = directoriesInReach(head, [...listed.keys()], GENERATION_SUBREQUESTS - FIXED, DIRECTORY_TARGET);
  const dirs = head.version === 2 ? head.directories : [];
  const loaded = new Map<string, TablePageRefV1[]>();
  for (const d of reach.directories) {
    dirsRead++;
    loaded.set(dirs[d]!.name, decodeDirectory(await gunzip(bodies.get(dirs[d]!.name)!)));
  }
  const chosen = chooseChanges(
    [...loaded.values()].flat(),
    reach.keys.map((key) => ({ key, read: false })),
    GENERATION_SUBREQUESTS - FIXED - reach.reserved,
    PAGE_TARGET,
    true,
  );
  const changes = new Map(chosen.keys.map((key) => [key, listed.get(key)!]));
  const next = await buildGeneration(
    head,
    changes,
    async (ref) => (pagesRead++, decodePageBytes(await gunzip(await body(ref.name))).entries.entries()),
    {
      root: "scale",
      shardBytes: DEFAULT_SHARD_TARGET_BYTES,
      now: 1,
      pinsApart: true,
      directory: async (ref) => loaded.get(ref.name)!,
    },
  );
  const signed = JSON.stringify(await signJson(next.head, signer));
  const c = process.cpuUsage(c0);
  const newDirs = new Set(next.head.directories.map((d) => d.name));
  const dirBodies = next.pages.filter((p) => newDirs.has(p.name));
  return {
    cpu_ms: (c.user + c.system) / 1000 - making,
    pages_read: pagesRead,
    pages_written: next.pages.length - dirBodies.length,
    directories_read: dirsRead,
    directories_written: dirBodies.length,
    head_kb: signed.length / 1024,
    directory_kb: Math.max(0, ...dirBodies.map((d) => d.gz.length)) / 1024,
    subrequests: FIXED + reach.reserved + chosen.subrequests,
    puts: next.pages.reduce((n, p) => n + (p.pins ? 2 : 1), 0) + 3,
    changes: changes.size,
  };
}

/** Linear in between the measured sizes, flat beyond them. */
function interpolate(points: readonly ({ pages: number } & Measured)[], pages: number, field: keyof Measured): number {
  const hi = points.findIndex((q) => q.pages >= pages);
  if (hi <= 0) return points[hi === 0 ? 0 : points.length - 1]![field];
  const a = points[hi - 1]!;
  const b = points[hi]!;
  return a[field] + ((b[field] - a[field]) * (pages - a.pages)) / (b.pages - a.pages);
}

const signer = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const r2Ms = Number(values["r2-ms"]);
const rows: (Measured & { pages: number; objects: number; pattern: string })[] = [];
for (const pattern of ["append", "spread"] as const) {
  for (const pages of values.pages.split(",").map(Number)) {
    await generation(pages, pattern, signer, 99);
    const runs: Measured[] = [];
    for (let r = 0; r < Number(values.rounds); r++) runs.push(await generation(pages, pattern, signer, r));
    const pick = (k: keyof Measured) => Number(median(runs.map((x) => x[k])).toFixed(1));
    const fields = Object.keys(runs[0]!) as (keyof Measured)[];
    rows.push({
      pattern,
      pages,
      objects: pages * PAGE_TARGET,
      ...(Object.fromEntries(fields.map((k) => [k, pick(k)])) as unknown as Measured),
    });
  }
}
// Publishing N objects from nothing: each generation runs on the table so far and adds the changes
// it takes; its sequential R2 round trips are the list calls, the head, the directory pages (in
// parallel), the page reads (six at a time, as mergePages reads them), the writes (in parallel), the generation, the head, the keys and the deletes.
const totals = values.totals
  .split(",")
  .map(Number)
  .flatMap((n) =>
    (["append", "spread"] as const).map((pattern) => {
      const points = rows.filter((r) => r.pattern === pattern);
      let cpu = 0;
      let rounds = 0;
      let generations = 0;
      for (let objects = 0; objects < n; generations++) {
        const pages = Math.max(1, objects / PAGE_TARGET);
        const taken = Math.max(1, interpolate(points, pages, "changes"));
        cpu += interpolate(points, pages, "cpu_ms");
        rounds +=
          Math.ceil(Math.min(taken, MAX_CHANGES_PER_GENERATION) / 1000) * 2 +
          6 +
          Math.ceil(interpolate(points, pages, "pages_read") / 6);
        objects += taken;
      }
      return {
        objects: n,
        pattern,
        generations,
        cpu_s: Number((cpu / 1000).toFixed(1)),
        wall_s: Number(((cpu + rounds * r2Ms) / 1000).toFixed(0)),
      };
    }),
  );
// The same objects arriving spread at random at the queue's rate, with the sweep and without.
const cost = fitCost(rows);
// Before: each generation from the first key, pages read one after another, the next at once while
// more wait. Now: the sweep, LOAD_AHEAD pages read at once, a sparse generation's next after the debounce.
const policies = {
  first: { lists: LIST_CALLS, budget: GENERATION_SUBREQUESTS, reads: 1, dense: 0 },
  sweep: { lists: LIST_CALLS, budget: GENERATION_SUBREQUESTS, reads: 6, dense: 100 },
} as const;
const arrivals = values.rate
  .split(",")
  .map(Number)
  .flatMap((rate) =>
    values.totals
      .split(",")
      .map(Number)
      .flatMap((n) =>
        (["first", "sweep"] as const).map((policy) => ({
          rate,
          ...simulateArrivals(n, rate, policy, cost, r2Ms, policies[policy]),
        })),
      ),
  );
if (values.json) process.stdout.write(`${JSON.stringify({ r2_ms: r2Ms, rows, totals, cost, arrivals })}\n`);
else {
  for (const r of rows) {
    process.stdout.write(
      `${r.pattern}, table of ${r.objects} objects: ${r.cpu_ms} ms CPU per generation, ${r.changes} changes taken, pages ${r.pages_read} read / ${r.pages_written} written, directory pages ${r.directories_read} read / ${r.directories_written} written (largest ${r.directory_kb} KB gzip), head ${r.head_kb} KB, ${r.puts} puts, ${r.subrequests} subrequests\n`,
    );
  }
  for (const t of totals)
    process.stdout.write(
      `publish ${t.objects} objects (${t.pattern}): ${t.generations} generations, ${t.cpu_s} s CPU, ≈ ${t.wall_s} s wall at ${r2Ms} ms per R2 round trip\n`,
    );
  process.stdout.write(
    `generation CPU fit: ${cost.fixedMs.toFixed(1)} ms + ${cost.pageMs.toFixed(2)} ms a page + ${cost.changeMs.toFixed(4)} ms a change\n`,
  );
  for (const a of arrivals)
    process.stdout.write(
      `${a.objects} objects spread at ${a.rate}/s (${a.policy}): arrivals ${a.arrivals_s} s, ${a.generations} generations, queue work ${a.work_s} s, all published at ${a.done_s} s, ${a.changes_per_page} changes a page rewritten, ≤ ${a.max_pages} pages and ${a.max_subrequests} subrequests a generation\n`,
    );
}
