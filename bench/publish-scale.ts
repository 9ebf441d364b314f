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
import { manifestSigner } from "../common/manifest-sign.js";
import { PAGE_TARGET } from "../common/dataset-table/generation.js";
import {
  generation,
  GENERATION_SUBREQUESTS,
  LIST_CALLS,
  MAX_CHANGES_PER_GENERATION,
  type Measured,
} from "./publish-model.js";
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
