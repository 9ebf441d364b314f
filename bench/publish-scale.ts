/**
 * The table publisher against table size: one generation (≤ 1000 pending changes) applied to a
 * table of P pages of 1000 entries, with the code the Worker's publish consumer runs (parse the
 * signed head, parse the changes the marks carry, buildGeneration: read, merge, split, gzip and
 * digest the pages the changes fall into, then sign the head), timed in Node's V8 with
 * synthetic entries. Two arrival patterns: "append" (keys after every listed one: new uploads
 * of a growing dataset, and `ec index` of a filled bucket, whose pending marks list in key
 * order) and "spread" (1000 listed changes all over the table, the worst case: changes arriving
 * in random key order while the publisher keeps pace). The publisher takes whole pages within
 * its subrequest budget (chooseChanges, GENERATION_SUBREQUESTS), so a spread generation takes
 * fewer changes. R2 operations per generation are counted; the wall time to publish N objects
 * from nothing sums the generations over the table's growth.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/publish-scale.js [--pages 1,10,100,1000,10000] [--rounds 3] [--r2-ms 25] [--json]
 */
import { generateKeyPairSync } from "node:crypto";
import { parseArgs } from "node:util";
import { chooseChanges } from "../common/dataset-table/budget.js";
import { buildGeneration, encodePage, PAGE_TARGET } from "../common/dataset-table/generation.js";
import { decodePageBytes } from "../common/dataset-table/page-codec.js";
import { manifestSigner, signJson, type ManifestSigner } from "../common/manifest-sign.js";
import { SignedManifestV1, TableEntryV1, TableHeadV1, type TablePageRefV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { seededRng } from "../sdk/sampler/rng.js";
import { syntheticEntry } from "./synthetic-table.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    pages: { type: "string", default: "1,10,100,1000,10000" },
    rounds: { type: "string", default: "3" },
    "r2-ms": { type: "string", default: "25" },
    totals: { type: "string", default: "100000,1000000,10000000" },
    json: { type: "boolean", default: false },
  },
});
/** edge/table/publish.ts MAX_CHANGES_PER_GENERATION (one R2 list call of marks); not imported, since edge/ builds against the Worker's types. */
const MAX_CHANGES_PER_GENERATION = 1000;
/** edge/table/publish.ts GENERATION_SUBREQUESTS and GENERATION_FIXED (list, head, delete, three puts). */
const GENERATION_SUBREQUESTS = 400;
const GENERATION_FIXED = 6;
/** Page p holds the even slots; a spread change takes an odd slot of some page, an append the page after the last. */
const keyOf = (p: number, slot: number) => `scale/o-${String(p).padStart(6, "0")}-${String(slot).padStart(5, "0")}.mp4`;
const pageEntries = (p: number) =>
  Array.from({ length: PAGE_TARGET }, (_, s) => syntheticEntry(keyOf(p, 2 * s), p * PAGE_TARGET + s));
/** Sequential R2 round trips of one publish: list marks, get head, get pages, put pages, put gen, put head, put keys, delete marks. */
const R2_ROUNDS = 8;

async function gunzipBytes(gz: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(
    await new Response(
      new Blob([gz as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream("gzip")),
    ).arrayBuffer(),
  );
}

interface Measured {
  cpu_ms: number;
  pages_read: number;
  pages_written: number;
  head_kb: number;
  subrequests: number;
  /** Of the listed changes, those the budget took into this generation. */
  changes: number;
}

/** One generation of MAX_CHANGES_PER_GENERATION changes on a table of `pages` full pages. */
async function generation(
  pages: number,
  pattern: "append" | "spread",
  signer: ManifestSigner,
  round: number,
): Promise<Measured> {
  const rng = seededRng(round, pages, pattern);
  const changed = new Map<number, Set<number>>();
  const marks: string[] = [];
  for (let i = 0; i < MAX_CHANGES_PER_GENERATION; i++) {
    const [p, slot] =
      pattern === "append" ? [pages, 2 * i] : [Math.floor(rng() * pages), 2 * Math.floor(rng() * PAGE_TARGET) + 1];
    if (changed.get(p)?.has(slot)) continue;
    changed.set(p, (changed.get(p) ?? new Set()).add(slot));
    marks.push(JSON.stringify(syntheticEntry(keyOf(p, slot), 1e9 + i)));
  }
  // The previous generation: every page referenced; bodies only of the pages the changes fall into.
  const bodies = new Map<string, Uint8Array>();
  const refs: TablePageRefV1[] = [];
  for (let p = 0; p < pages; p++) {
    const ref = {
      name: `1-${p}`,
      first: keyOf(p, 0),
      last: keyOf(p, 2 * (PAGE_TARGET - 1)),
      count: PAGE_TARGET,
      bytes: PAGE_TARGET * 20_048,
      sha256: "",
    };
    if (changed.has(p) || (pattern === "append" && p === pages - 1)) {
      const page = await encodePage("scale", pageEntries(p));
      ref.sha256 = page.sha256;
      bodies.set(ref.name, page.gz);
    } else ref.sha256 = "x".repeat(43);
    refs.push(ref);
  }
  const previous: TableHeadV1 = {
    version: 1,
    root: "scale",
    generation: 1,
    createdAt: 0,
    shardBytes: DEFAULT_SHARD_TARGET_BYTES,
    objects: pages * PAGE_TARGET,
    pages: refs,
  };
  const storedHead = JSON.stringify(await signJson(previous, signer));
  let read = 0;
  const c0 = process.cpuUsage();
  // What publishTable and writeGeneration compute, in order, with R2 replaced by the bytes it would return.
  const signed = SignedManifestV1.parse(JSON.parse(storedHead));
  const head = TableHeadV1.parse(JSON.parse(signed.payload));
  const listed = new Map(marks.map((m) => TableEntryV1.parse(JSON.parse(m))).map((e) => [e.key, e]));
  const chosen = chooseChanges(
    head.pages,
    [...listed.keys()].map((key) => ({ key, read: false })),
    GENERATION_SUBREQUESTS - GENERATION_FIXED,
  );
  const changes = new Map(chosen.keys.map((key) => [key, listed.get(key)!]));
  const next = await buildGeneration(
    head,
    changes,
    async (ref) => (read++, decodePageBytes(await gunzipBytes(bodies.get(ref.name)!)).entries.entries()),
    { root: "scale", shardBytes: DEFAULT_SHARD_TARGET_BYTES, now: 1 },
  );
  const body = JSON.stringify(await signJson(next.head, signer));
  const c = process.cpuUsage(c0);
  return {
    cpu_ms: (c.user + c.system) / 1000,
    pages_read: read,
    pages_written: next.pages.length,
    head_kb: body.length / 1024,
    // list, get head, page gets, page puts, put gen, put head, put keys, delete
    subrequests: 2 + read + next.pages.length + 3 + 1,
    changes: changes.size,
  };
}

/** Linear in between the measured sizes, flat beyond them. */
function interpolate(
  points: readonly ({ pages: number } & Record<"cpu_ms" | "changes", number>)[],
  pages: number,
  field: "cpu_ms" | "changes",
): number {
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
    rows.push({
      pattern,
      pages,
      objects: pages * PAGE_TARGET,
      cpu_ms: pick("cpu_ms"),
      pages_read: pick("pages_read"),
      pages_written: pick("pages_written"),
      head_kb: pick("head_kb"),
      subrequests: pick("subrequests"),
      changes: pick("changes"),
    });
  }
}
// Publishing N objects from nothing: each generation runs on the table so far and adds the changes it takes.
const totals = values.totals
  .split(",")
  .map(Number)
  .flatMap((n) =>
    (["append", "spread"] as const).map((pattern) => {
      const points = rows.filter((r) => r.pattern === pattern);
      let cpu = 0;
      let generations = 0;
      for (let objects = 0; objects < n; generations++) {
        const pages = Math.max(1, objects / PAGE_TARGET);
        cpu += interpolate(points, pages, "cpu_ms");
        objects += Math.max(1, interpolate(points, pages, "changes"));
      }
      return {
        objects: n,
        pattern,
        generations,
        cpu_s: Number((cpu / 1000).toFixed(1)),
        wall_s: Number(((cpu + generations * R2_ROUNDS * r2Ms) / 1000).toFixed(0)),
      };
    }),
  );
if (values.json) process.stdout.write(`${JSON.stringify({ r2_ms: r2Ms, rows, totals })}\n`);
else {
  for (const r of rows) {
    process.stdout.write(
      `${r.pattern}, table of ${r.objects} objects: ${r.cpu_ms} ms CPU per generation, ${r.pages_read} pages read, ${r.pages_written} written, head ${r.head_kb} KB, ${r.subrequests} subrequests, ${r.changes} changes taken\n`,
    );
  }
  for (const t of totals)
    process.stdout.write(
      `publish ${t.objects} objects (${t.pattern}): ${t.generations} generations, ${t.cpu_s} s CPU, ≈ ${t.wall_s} s wall at ${r2Ms} ms per R2 round trip\n`,
    );
}
