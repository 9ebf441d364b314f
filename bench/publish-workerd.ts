/**
 * The publisher in workerd at scale, against its model. A table of `--table` objects is
 * synthesized (synthesizeGeneration: the page codec, pins apart, directory pages, a head signed
 * with the edge's key) and stored straight into the persisted local R2, with `--new` new objects
 * whose keys fall spread at random among the table's (a small video each, its index cached as
 * the indexer caches it). Then, in the real Worker (`wrangler dev`, workerd, local R2, the real
 * local queues):
 *  1. index: `POST {root}/index` enqueues the new objects; the index queue indexes each and marks
 *     it pending, with the publish debounce set past the run so that nothing publishes yet;
 *  2. publish: the edge restarted with the deployed debounce (10 s), one object more PUT through
 *     the edge, and the publish queue publishes every pending change, generation after
 *     generation, alone in the process. Each invocation logs its generations and the R2 and
 *     queue calls it made (edge/table/index-queue.ts); workerd's CPU (utime + stime from /proc,
 *     the local R2 included) is sampled every 50 ms and charged to each invocation's span.
 * In the same run the model (bench/publish-model.ts: the same generation timed in Node's V8,
 * bench/publish-arrivals.ts: the queue simulated) on the same table and changes: its CPU for
 * each generation workerd published, and its simulated generations. Then 10^7 objects at the
 * Queues rate with the model's CPU scaled by what workerd took.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/publish-workerd.js [--table 100000] [--new 5000] [--json]
 */
import { createHash, generateKeyPairSync } from "node:crypto";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { indexCacheKey, tableKeys } from "../common/dataset-table/table-keys.js";
import { encodeKeyPath } from "../common/keys.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import { buildIndex, bytesReader, encodeIndex } from "../common/media-index/index.js";
import type { IndexV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { ensureDevVars, type LocalEdge, startLocalEdge } from "../sdk/dev/index.js";
import { seededRng } from "../sdk/sampler/rng.js";
import { makeVideo } from "../test/helpers/make-video.js";
import { seedLocalR2, type SeedObject } from "../test/helpers/seed-r2.js";
import { fitCost, simulateArrivals, type GenerationCost } from "./publish-arrivals.js";
import { generation, GENERATION_SUBREQUESTS, LIST_CALLS, type Measured } from "./publish-model.js";
import { synthesizeGeneration } from "./synthetic-table.js";

const { values } = parseArgs({
  options: {
    table: { type: "string", default: "100000" },
    new: { type: "string", default: "5000" },
    "r2-ms": { type: "string", default: "25" },
    json: { type: "boolean", default: false },
  },
});
const T = Number(values.table);
const N = Number(values.new);
const r2Ms = Number(values["r2-ms"]);
for (const [name, n] of [
  ["table", T],
  ["new", N],
] as const)
  if (!Number.isInteger(n) || n < 1000)
    throw new Error(`Expected an integer of at least 1000 for ${name} but received ${n}`);
if (N > T) throw new Error(`Expected --new (${N}) no larger than --table (${T}): new keys fall between the table's`);

const ROOT = "pubwd";
const dir = mkdtempSync(join(tmpdir(), "ec-publish-workerd-"));
const persistDir = join(dir, "r2");
const vars = ensureDevVars(dir);
const signer = await manifestSigner(vars.EC_MANIFEST_KEY);
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

// --- Seeding: the table, and the new objects with their cached indexes. ---

const gzHttp = { contentType: "application/octet-stream", contentEncoding: "gzip" };
const digits = String(T).length;
const seed0 = performance.now();
{
  let chunk: SeedObject[] = [];
  const { head, directories } = await synthesizeGeneration(
    { root: ROOT, objects: T, shardBytes: DEFAULT_SHARD_TARGET_BYTES, now: Math.floor(Date.now() / 1000) },
    async (page) => {
      chunk.push({ key: tableKeys.page(ROOT, page.name), body: page.gz, httpMetadata: gzHttp });
      if (page.pins) chunk.push({ key: tableKeys.pins(ROOT, page.name), body: page.pins, httpMetadata: gzHttp });
      if (chunk.length >= 4000) {
        await seedLocalR2(persistDir, chunk);
        chunk = [];
      }
    },
  );
  const body = JSON.stringify(await signJson(head, signer));
  await seedLocalR2(persistDir, [
    ...chunk,
    ...directories.map((d) => ({ key: tableKeys.page(ROOT, d.name), body: d.gz, httpMetadata: gzHttp })),
    { key: tableKeys.generation(ROOT, head.generation), body },
    { key: tableKeys.head(ROOT), body },
    { key: tableKeys.publicKeys(), body: JSON.stringify(publicKeys([signer])) },
  ]);
}
const template = new Uint8Array(
  readFileSync(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6, faststart: true })),
);
const base = await buildIndex(bytesReader(template), { key: "template.mp4", etag: '"t"' });
if (base.kind !== "video") throw new Error(`the template video indexes as ${base.kind}`);
/** The template plus a trailing `free` box with the object's number: its own etag. */
function objectBytes(i: number): Uint8Array {
  const out = new Uint8Array(template.length + 16);
  out.set(template);
  const view = new DataView(out.buffer, template.length);
  view.setUint32(0, 16);
  out.set(new TextEncoder().encode("free"), template.length + 4);
  view.setBigUint64(8, BigInt(i));
  return out;
}
// N distinct table positions at random; each new key sorts just before the table's key there.
const rng = seededRng(36, T, "publish-workerd");
const slots = new Set<number>();
while (slots.size < N) slots.add(Math.floor(rng() * T));
const newKey = (i: number) => `${ROOT}/o-${String(i).padStart(digits, "0")}-n.mp4`;
{
  const items: SeedObject[] = [];
  let j = 0;
  for (const i of slots) {
    const key = newKey(i);
    const bytes = objectBytes(T + j++);
    // R2's ETag of a single-part upload is the MD5 of its bytes.
    const md5 = createHash("md5").update(bytes).digest("hex");
    const index: IndexV1 = { ...base, key, etag: `"${md5}"`, size: bytes.length };
    items.push({ key, body: bytes });
    items.push({
      key: await indexCacheKey(md5, key),
      body: encodeIndex(index),
      httpMetadata: { contentType: "application/vnd.ec.index.v1" },
      customMetadata: { kind: "video", key },
    });
  }
  await seedLocalR2(persistDir, items);
}
const seedS = (performance.now() - seed0) / 1000;
log(`seeded a table of ${T} objects and ${N} new objects in ${seedS.toFixed(1)} s`);

// --- workerd's CPU, from /proc: the edge's processes are this process's descendants. ---

const TICK_MS = 10;
function workerdCpuMs(): number {
  const all = new Map<number, { ppid: number; comm: string; ticks: number }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const f = stat.slice(close + 2).split(" ");
    all.set(Number(name), { ppid: Number(f[1]), comm, ticks: Number(f[11]) + Number(f[12]) });
  }
  const mine = new Set([process.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, p] of all)
      if (!mine.has(pid) && mine.has(p.ppid)) {
        mine.add(pid);
        grew = true;
      }
  }
  let ms = 0;
  for (const pid of mine) if (all.get(pid)!.comm.startsWith("workerd")) ms += all.get(pid)!.ticks * TICK_MS;
  return ms;
}
const samples: { t: number; cpu: number }[] = [];
const sampler = setInterval(() => samples.push({ t: Date.now(), cpu: workerdCpuMs() }), 50);
/** workerd's CPU at wall time `t`, between the samples around it. */
function cpuAt(t: number): number {
  let i = samples.findIndex((s) => s.t >= t);
  if (i === -1) i = samples.length - 1;
  if (i === 0) return samples[0]!.cpu;
  const a = samples[i - 1]!;
  const b = samples[i]!;
  return b.t === a.t ? b.cpu : a.cpu + ((b.cpu - a.cpu) * Math.min(1, Math.max(0, t - a.t))) / (b.t - a.t);
}

// --- The Worker's lines, as they come. ---

interface Published {
  generations: {
    generation: number;
    objects: number;
    changes: number;
    pages: number;
    more: boolean;
    sparse: boolean;
    subrequests: number;
  }[];
  calls: Record<string, number>;
  subrequests: number;
  started: number;
  ended: number;
}
const published: Published[] = [];
let indexAcked = 0;
let pending = "";
function onOutput(chunk: string): void {
  appendFileSync(join(dir, "edge.log"), chunk);
  pending += chunk;
  const lines = pending.split("\n");
  pending = lines.pop()!;
  for (const line of lines) {
    const q = /QUEUE ec-index (\d+)\/(\d+)/.exec(line);
    if (q) indexAcked += Number(q[1]);
    const at = line.indexOf('{"msg":"publish queue: published"');
    if (at >= 0) published.push(JSON.parse(line.slice(at)) as Published);
  }
}
const until = async (check: () => boolean, what: string, limitS: number) => {
  const end = Date.now() + limitS * 1000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out after ${limitS} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};
const edgeOpts = { quiet: true, logLevel: "log" as const, varsDir: dir, persistDir, onOutput };

// --- 1. Index: every new object through the index queue, nothing published yet. ---

let edge: LocalEdge = await startLocalEdge({ ...edgeOpts, vars: { EC_PUBLISH_DELAY_SECONDS: "86400" } });
const auth = { authorization: `Bearer ${edge.token}` };
const index0 = { t: Date.now(), cpu: workerdCpuMs() };
for (let cursor: string | null | undefined; ; ) {
  const res = await fetch(
    `${edge.url}/v1/datasets/${ROOT}/index${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ""}`,
    { method: "POST", headers: auth },
  );
  if (res.status !== 202) throw new Error(`enqueue: ${res.status} ${await res.text()}`);
  cursor = ((await res.json()) as { cursor: string | null }).cursor;
  if (cursor === null) break;
}
await until(() => indexAcked >= N, `${N} index messages`, 600);
const index1 = { t: Date.now(), cpu: workerdCpuMs() };
log(
  `indexed ${indexAcked} in ${((index1.t - index0.t) / 1000).toFixed(1)} s, workerd ${index1.cpu - index0.cpu} ms CPU`,
);
await edge.stop();

// --- 2. Publish: the deployed debounce, one upload more, the publish queue alone. ---

edge = await startLocalEdge({ ...edgeOpts });
await new Promise((r) => setTimeout(r, 3000));
const idle0 = { t: Date.now(), cpu: workerdCpuMs() };
await new Promise((r) => setTimeout(r, 3000));
const idle1 = { t: Date.now(), cpu: workerdCpuMs() };
const idleCpuPerMs = (idle1.cpu - idle0.cpu) / (idle1.t - idle0.t);
const total = T + N + 1;
const trigger = `${ROOT}/o-${String(T).padStart(digits, "0")}-n.mp4`;
const put0 = Date.now();
const put = await fetch(`${edge.url}/v1/objects/${encodeKeyPath(trigger)}`, {
  method: "PUT",
  headers: auth,
  body: Buffer.from(objectBytes(T + N)),
});
if (!put.ok) throw new Error(`PUT ${trigger}: ${put.status} ${await put.text()}`);
const last = () => published.at(-1)?.generations.at(-1);
// The last generation may still say more (its sweep began past the first key): the next finds nothing.
await until(() => (last()?.objects ?? 0) >= total, `a head of ${total} objects`, 300);
const done = Date.now();
await new Promise((r) => setTimeout(r, 2000));
clearInterval(sampler);
await edge.stop();

// --- The model, on the same table and changes, in this process. ---

const pages = Math.ceil(T / 1000);
const nodeSigner = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const rows: Measured[] = [];
await generation(pages, "spread", nodeSigner, 99);
for (const p of [Math.max(1, Math.round(pages / 10)), pages])
  for (const pattern of ["spread", "append"] as const) rows.push(await generation(p, pattern, nodeSigner, 1));
const cost = fitCost(rows);
const modelMs = (g: { pages: number; changes: number }, c: GenerationCost = cost) =>
  c.fixedMs + c.pageMs * g.pages + c.changeMs * g.changes;
const sweep = { lists: LIST_CALLS, budget: GENERATION_SUBREQUESTS, reads: 6, dense: 100 };
/** Marks a list call returns in the local R2 when it includes metadata (Miniflare's cap); R2's limit is 1000. */
const LOCAL_LIST_YIELD = 100;
// Every change pending when the first generation starts (they were indexed before it).
const simulated = simulateArrivals(N + 1, 1e9, "sweep", cost, r2Ms, { ...sweep, listYield: LOCAL_LIST_YIELD }, T);

// --- Figures. ---

const invocations = published.map((p) => {
  const cpu = cpuAt(p.ended + 50) - cpuAt(p.started - 50) - idleCpuPerMs * (p.ended - p.started + 100);
  const reads = (p.calls["r2.get"] ?? 0) + (p.calls["r2.list"] ?? 0) + (p.calls["r2.head"] ?? 0);
  const writes = (p.calls["r2.put"] ?? 0) + (p.calls["r2.delete"] ?? 0);
  const model = p.generations.reduce((s, g) => s + modelMs(g), 0);
  return {
    generations: p.generations.map((g) => g.generation),
    changes: p.generations.reduce((s, g) => s + g.changes, 0),
    pages: p.generations.reduce((s, g) => s + g.pages, 0),
    sparse: p.generations.some((g) => g.sparse),
    r2_lists: p.calls["r2.list"] ?? 0,
    r2_reads: reads,
    r2_writes: writes,
    subrequests: p.subrequests,
    budgeted: p.generations.reduce((s, g) => s + g.subrequests, 0),
    wall_ms: p.ended - p.started,
    workerd_cpu_ms: Math.round(cpu),
    model_cpu_ms: Math.round(model),
  };
});
const sum = (f: (i: (typeof invocations)[number]) => number) => invocations.reduce((s, i) => s + f(i), 0);
const gens = invocations.reduce((s, i) => s + i.generations.length, 0);
const ratio =
  sum((i) => i.workerd_cpu_ms) /
  Math.max(
    1,
    sum((i) => i.model_cpu_ms),
  );
const scaled: GenerationCost = {
  fixedMs: cost.fixedMs * ratio,
  pageMs: cost.pageMs * ratio,
  changeMs: cost.changeMs * ratio,
};
const at1e7 = {
  model: simulateArrivals(1e7, 5000, "sweep", cost, r2Ms, sweep),
  workerd_cpu: simulateArrivals(1e7, 5000, "sweep", scaled, r2Ms, sweep),
  workerd_cpu_lists_of_100: simulateArrivals(1e7, 5000, "sweep", scaled, r2Ms, {
    ...sweep,
    listYield: LOCAL_LIST_YIELD,
  }),
};
const result = {
  table: T,
  new: N + 1,
  seed_s: Number(seedS.toFixed(1)),
  index: { messages: indexAcked, wall_s: (index1.t - index0.t) / 1000, workerd_cpu_ms: index1.cpu - index0.cpu },
  publish: {
    generations: gens,
    invocations: invocations.length,
    wall_s: (done - put0) / 1000,
    work_s: sum((i) => i.wall_ms) / 1000,
    workerd_cpu_ms: sum((i) => i.workerd_cpu_ms),
    model_cpu_ms: sum((i) => i.model_cpu_ms),
    workerd_vs_model_cpu: Number(ratio.toFixed(2)),
    changes_per_page: Number(
      (
        sum((i) => i.changes) /
        Math.max(
          1,
          sum((i) => i.pages),
        )
      ).toFixed(1),
    ),
    per_object: {
      workerd_cpu_ms: Number((sum((i) => i.workerd_cpu_ms) / (N + 1)).toFixed(3)),
      model_cpu_ms: Number((sum((i) => i.model_cpu_ms) / (N + 1)).toFixed(3)),
      r2_reads: Number((sum((i) => i.r2_reads) / (N + 1)).toFixed(3)),
      r2_writes: Number((sum((i) => i.r2_writes) / (N + 1)).toFixed(3)),
    },
    max: {
      subrequests: Math.max(...invocations.map((i) => i.subrequests)),
      workerd_cpu_ms: Math.max(...invocations.map((i) => i.workerd_cpu_ms)),
      pages: Math.max(...invocations.map((i) => i.pages)),
    },
    idle_cpu_ms_per_s: Number((idleCpuPerMs * 1000).toFixed(1)),
  },
  model: { cost, simulated },
  at_1e7_5000_per_s: at1e7,
  invocations,
};
if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
else {
  const p = result.publish;
  process.stdout.write(
    `table ${T} objects, ${N + 1} new spread keys: indexed in ${result.index.wall_s.toFixed(1)} s (workerd ${result.index.workerd_cpu_ms} ms CPU)\n` +
      `workerd: ${p.generations} generations in ${p.invocations} invocations, ${p.wall_s.toFixed(1)} s wall (${p.work_s.toFixed(1)} s in invocations), ${p.changes_per_page} changes a page rewritten\n` +
      `         CPU ${p.workerd_cpu_ms} ms (${p.per_object.workerd_cpu_ms} ms an object), model ${p.model_cpu_ms} ms (${p.per_object.model_cpu_ms}): workerd ÷ model ${p.workerd_vs_model_cpu}\n` +
      `         R2 ${p.per_object.r2_reads} reads, ${p.per_object.r2_writes} writes an object; most a invocation: ${p.max.subrequests} subrequests, ${p.max.workerd_cpu_ms} ms CPU, ${p.max.pages} pages\n` +
      `model:   ${simulated.generations} generations, ${simulated.changes_per_page} changes a page rewritten, ≤ ${simulated.max_pages} pages and ${simulated.max_subrequests} subrequests a generation\n` +
      `10^7 at 5,000/s: model ${at1e7.model.generations} generations, ${at1e7.model.work_s} s of queue work; with workerd's CPU ${at1e7.workerd_cpu.work_s} s (all published at ${at1e7.workerd_cpu.done_s} s); and lists of ${LOCAL_LIST_YIELD} marks ${at1e7.workerd_cpu_lists_of_100.generations} generations, ${at1e7.workerd_cpu_lists_of_100.work_s} s (at ${at1e7.workerd_cpu_lists_of_100.done_s} s)\n`,
  );
  for (const i of invocations) process.stdout.write(`  ${JSON.stringify(i)}\n`);
}
rmSync(dir, { recursive: true, force: true });
