/**
 * Many ranks opening one dataset at once, as a run of hundreds of ranks starts: per table size,
 * `--ranks` concurrent lazy `open()`s (`OpenParts.lazy`, rank r of world N, each with its own
 * edge source: its own HTTP/2 connection, in-process cache and known-edges check) against the
 * local edge (workerd with its local R2, `startLocalEdge`), from one Node process so that the edge
 * side is what is measured (their requests share `--connections` connections to it: see below). Tables are synthesized (synthesizeGeneration: the publisher's page
 * codec, pins apart, directory pages, a head signed with the edge's key) and stored straight
 * into the edge's persisted R2 before it starts. Measured, side by side in one run:
 *  - open: every rank's `open()`;
 *  - first batch, table level (no video is decoded, no object nor index is fetched: the objects
 *    are synthetic): each rank's first `--batch` clips readied (the pages of their window), then
 *    what the edge source does before its first fetch of each clip's object (its page's pins,
 *    the etag checked, the signed URLs asked for in one POST /urls).
 * Reported per size: edge requests per rank (mean and max, by route), bytes per rank (read off
 * the connections, headers and bodies, gzip as sent, over the ranks), the edge's CPU for the whole phase (utime + stime from /proc of wrangler and workerd,
 * the processes of the edge's group), per rank, and as a ratio to the smallest size; the
 * client's CPU (this process) too. A table of one page (10^3 objects) is read whole by open()
 * (the lazy path takes tables of more than one window of pages): its row is that read.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-ranks.js [--sizes 1000,100000,1000000] [--ranks 512] [--batch 8] [--connections 64] [--keep DIR] [--json]
 *
 * `--batch 0` measures open() alone (with 512 ranks in one process the first batches' deal and
 * page planning take this process's CPU, not the edge's: rank r walks the order up to its own
 * turn, about r + 1 turns of about 8 GOP runs, so O(ranks²) here, O(ranks) on a rank's own host). `--keep DIR`
 * keeps the seeded edge state in DIR (reused by a later run with the same DIR).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { subscribe } from "node:diagnostics_channel";
import type { Socket } from "node:net";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Agent, interceptors, setGlobalDispatcher } from "undici";
import { tableKeys } from "../common/dataset-table/table-keys.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { ensureDevVars, startLocalEdge } from "../sdk/dev/index.js";
import { open, type Dataset } from "../sdk/open.js";
import type { ClipSequence, RankClip } from "../sdk/sampler/rank-clips.js";
import type { DatasetListing, DatasetObject } from "../sdk/source/source.js";
import { seedLocalR2, type SeedObject } from "../test/helpers/seed-r2.js";
import { synthesizeGeneration } from "./synthetic-table.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,100000,1000000" },
    ranks: { type: "string", default: "512" },
    batch: { type: "string", default: "8" },
    connections: { type: "string", default: "64" },
    keep: { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const sizes = values.sizes.split(",").map(Number);
const ranks = Number(values.ranks);
const batch = Number(values.batch);
const connections = Number(values.connections);
for (const [name, n] of [
  ["ranks", ranks],
  ["connections", connections],
  ...sizes.map((s) => ["sizes", s] as const),
] as const)
  if (!Number.isInteger(n) || n < 1) throw new Error(`Expected a positive integer for ${name} but received ${n}`);
if (!Number.isInteger(batch) || batch < 0)
  throw new Error(`Expected a whole number for batch (0: open() alone) but received ${batch}`);

const dir = values.keep ?? mkdtempSync(join(tmpdir(), "ec-open-ranks-"));
const persistDir = join(dir, "r2");
const vars = ensureDevVars(dir);
const signer = await manifestSigner(vars.EC_MANIFEST_KEY);
// Every rank checks the edge's keys against one known-edges file, as ranks sharing a home do.
process.env.EC_KNOWN_EDGES = join(dir, "known-edges.json");
const rootOf = (n: number) => `ranks${n}`;

// --- Seeding: a synthesized generation per size, straight into the persisted local R2. ---

const gzHttp = { contentType: "application/octet-stream", contentEncoding: "gzip" };
/** Pages stored per seeding run (each starts a Miniflare). */
const SEED_CHUNK = 4000;

async function seedSize(n: number): Promise<void> {
  const root = rootOf(n);
  const marker = join(dir, `seeded-${n}`);
  if (existsSync(marker)) return;
  let chunk: SeedObject[] = [];
  const { head, directories } = await synthesizeGeneration(
    { root, objects: n, shardBytes: DEFAULT_SHARD_TARGET_BYTES, now: Math.floor(Date.now() / 1000) },
    async (page) => {
      chunk.push({ key: tableKeys.page(root, page.name), body: page.gz, httpMetadata: gzHttp });
      if (page.pins) chunk.push({ key: tableKeys.pins(root, page.name), body: page.pins, httpMetadata: gzHttp });
      if (chunk.length >= SEED_CHUNK) {
        await seedLocalR2(persistDir, chunk);
        chunk = [];
      }
    },
  );
  const body = JSON.stringify(await signJson(head, signer));
  await seedLocalR2(persistDir, [
    ...chunk,
    ...directories.map((d) => ({ key: tableKeys.page(root, d.name), body: d.gz, httpMetadata: gzHttp })),
    { key: tableKeys.generation(root, head.generation), body },
    { key: tableKeys.head(root), body },
    { key: tableKeys.publicKeys(), body: JSON.stringify(publicKeys([signer])) },
  ]);
  writeFileSync(marker, "");
}

const seedStart = performance.now();
for (const n of sizes) await seedSize(n);
const seedS = (performance.now() - seedStart) / 1000;

// --- Counting: each request the ranks send, attributed to its rank. ---

const rankOf = new AsyncLocalStorage<number>();
interface Counted {
  requests: number;
  byRoute: Map<string, number>;
}
let counted: Counted[] = [];
const route = (path: string): string =>
  path.startsWith("/v1/keys")
    ? "keys"
    : /\/table(\?|$)/.test(path)
      ? "head"
      : path.includes("/table/pages")
        ? "pages"
        : path.includes("/table/pins")
          ? "pins"
          : path.endsWith("/urls")
            ? "urls"
            : path.includes("/manifest")
              ? "manifest"
              : "other";
/** Counts a request for the rank in whose context it is sent (before the agent queues it). */
function count(path: string): void {
  const r = rankOf.getStore();
  if (r === undefined) return;
  const c = counted[r]!;
  c.requests++;
  const name = route(path);
  c.byRoute.set(name, (c.byRoute.get(name) ?? 0) + 1);
}

// Bytes as read off the connections to the edge (headers and bodies, gzip as sent), all ranks'.
const sockets = new Set<Socket>();
subscribe("undici:client:connected", (message) => sockets.add((message as { socket: Socket }).socket));
const bytesRead = () => [...sockets].reduce((s, k) => s + k.bytesRead, 0);

// --- CPU: the edge's processes (this process's descendants), from /proc. ---

const TICK_MS = 10; // USER_HZ = 100 on Linux
function processTree(): Map<number, { ppid: number; comm: string; ticks: number }> {
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
    // Fields after comm: state(0) ppid(1) … utime(11) stime(12).
    all.set(Number(name), { ppid: Number(f[1]), comm, ticks: Number(f[11]) + Number(f[12]) });
  }
  return all;
}
/** CPU ms of each process below this one (the edge's group: guard, wrangler, workerd), by name. */
function edgeCpu(): Map<string, number> {
  const all = processTree();
  const mine = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, p] of all)
      if (!mine.has(pid) && mine.has(p.ppid)) {
        mine.add(pid);
        grew = true;
      }
  }
  mine.delete(process.pid);
  const out = new Map<string, number>();
  for (const pid of mine) {
    const p = all.get(pid)!;
    const name = p.comm.startsWith("workerd") ? "workerd" : "node";
    out.set(name, (out.get(name) ?? 0) + p.ticks * TICK_MS);
  }
  return out;
}
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const clientCpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

// --- The run. ---

interface Phase {
  requests_per_rank: number;
  requests_per_rank_max: number;
  by_route: Record<string, number>;
  bytes_per_rank: number;
  edge_cpu_ms: number;
  edge_workerd_cpu_ms: number;
  edge_cpu_ms_per_rank: number;
  client_cpu_ms: number;
  wall_ms: number;
}

async function phase(fn: (r: number) => Promise<void>): Promise<Phase> {
  counted = Array.from({ length: ranks }, () => ({ requests: 0, byRoute: new Map() }));
  const read0 = bytesRead();
  const [e0, c0, t0] = [edgeCpu(), clientCpu(), performance.now()];
  await Promise.all(Array.from({ length: ranks }, (_, r) => rankOf.run(r, () => fn(r))));
  const [e1, c1, t1] = [edgeCpu(), clientCpu(), performance.now()];
  const bytes = bytesRead() - read0;
  const edge = sum(e1) - sum(e0);
  const totals = new Map<string, number>();
  for (const c of counted) for (const [k, v] of c.byRoute) totals.set(k, (totals.get(k) ?? 0) + v);
  const byRoute = Object.fromEntries([...totals].map(([k, v]) => [k, Number((v / ranks).toFixed(2))]));
  return {
    requests_per_rank: Number((counted.reduce((s, c) => s + c.requests, 0) / ranks).toFixed(2)),
    requests_per_rank_max: Math.max(...counted.map((c) => c.requests)),
    by_route: byRoute,
    bytes_per_rank: Math.round(bytes / ranks),
    edge_cpu_ms: edge,
    edge_workerd_cpu_ms: (e1.get("workerd") ?? 0) - (e0.get("workerd") ?? 0),
    edge_cpu_ms_per_rank: Number((edge / ranks).toFixed(2)),
    client_cpu_ms: Math.round(c1 - c0),
    wall_ms: Math.round(t1 - t0),
  };
}

/** What open() keeps private and the first batch needs: this rank's clips and the objects they name. */
interface DatasetInside {
  readonly mine: ClipSequence<RankClip>;
  readonly listing: DatasetListing;
  readonly source: { withUrls(object: DatasetObject, fn: () => Promise<void>): Promise<void> };
}

const noDecode = async () => {
  throw new Error("open-ranks decodes nothing");
};

interface Row {
  objects: number;
  open: Phase;
  first_batch: Phase;
  lazy: boolean;
}

async function measure(url: string, token: string, n: number): Promise<Row> {
  const datasets: Dataset[] = new Array(ranks);
  const options = (r: number) => ({
    frames: 16,
    batch: Math.max(1, batch),
    token,
    rank: r,
    world: ranks,
    shuffle: "shard-buffer",
  });
  const parts = { lazy: true, decode: noDecode, decodeImage: noDecode, openRun: false } as const;
  const dataset = `${url}/v1/datasets/${rootOf(n)}`;
  try {
    const openPhase = await phase(async (r) => {
      datasets[r] = await open(dataset, options(r), parts);
    });
    // Each rank's first batch walks the first 64 GOP runs and the order up to its own turn of the
    // first round (rank r: about r + 1 turns of about 8 runs): in one process that is O(ranks²)
    // of client CPU, what `--batch 0` leaves out.
    const firstBatch = await phase(async (r) => {
      if (batch === 0) return;
      const inside = datasets[r] as unknown as DatasetInside;
      const objects: DatasetObject[] = [];
      for (let i = 0; i < batch; i++) {
        await inside.mine.ready?.(i);
        const clip = inside.mine.at(i);
        if (clip) objects.push(inside.listing.objects.at(clip.ref.object)!);
      }
      // What the source does before its first fetch of an object: pins, etag check, signed URLs
      // (asked for together, one POST for the objects wanted in the same tick).
      await Promise.all(objects.map((o) => inside.source.withUrls(o, async () => {})));
    });
    return { objects: n, open: openPhase, first_batch: firstBatch, lazy: datasets[0]!.totalClips === Infinity };
  } finally {
    await Promise.all(datasets.map((d) => d?.close()));
  }
}

// The local edge (wrangler dev's workerd) stops answering with a thousand connections open at
// once (512 ranks' first pages), where Cloudflare's takes them: every rank sends through one
// agent of `--connections` connections instead of its own. The ranks still open at the same
// time; their requests queue in this process, so the counts and the edge's CPU are the same.
// edgeFetch keeps a global dispatcher made with options, as it keeps a user's.
// Under that load the local edge now and then closes a connection mid-request ("other side
// closed") or leaves a request unanswered; such requests are sent again (retry interceptor, after
// 20 s without an answer), counted again, and said.
const retried = { errors: 0 };
subscribe("undici:request:error", () => retried.errors++);
setGlobalDispatcher(
  new Agent({ connections, headersTimeout: 20_000, bodyTimeout: 20_000 })
    .compose((dispatch) => (opts, handler) => {
      count(opts.path);
      return dispatch(opts, handler);
    })
    .compose(
      interceptors.retry({
        maxRetries: 3,
        methods: ["GET", "POST"],
        minTimeout: 100,
        errorCodes: ["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"],
      }),
    ),
);
const edge = await startLocalEdge({ quiet: true, varsDir: dir, persistDir });
const idle = { cpu: 0, ms: 0 };
const rows: Row[] = [];
try {
  // One rank first, so that no size pays workerd's first compile and the known-edges file exists.
  await rankOf.run(0, async () => {
    counted = [{ requests: 0, byRoute: new Map() }];
    const d = await open(
      `${edge.url}/v1/datasets/${rootOf(sizes[0]!)}`,
      { frames: 16, token: edge.token, shuffle: "shard-buffer" },
      { lazy: true, decode: noDecode, decodeImage: noDecode, openRun: false },
    );
    await d.close();
  });
  const e0 = sum(edgeCpu());
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 2000));
  idle.cpu = sum(edgeCpu()) - e0;
  idle.ms = performance.now() - t0;
  for (const n of sizes) rows.push(await measure(edge.url, edge.token, n));
} finally {
  await edge.stop();
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}

const base = rows[0]!;
const result = {
  ranks,
  batch,
  seed_s: Number(seedS.toFixed(1)),
  request_errors_retried: retried.errors,
  edge_idle_cpu_ms_per_s: Number(((idle.cpu / idle.ms) * 1000).toFixed(1)),
  rows: rows.map((r) => ({
    ...r,
    open_edge_cpu_vs_smallest: Number((r.open.edge_cpu_ms / Math.max(1, base.open.edge_cpu_ms)).toFixed(2)),
    first_batch_edge_cpu_vs_smallest: Number(
      (r.first_batch.edge_cpu_ms / Math.max(1, base.first_batch.edge_cpu_ms)).toFixed(2),
    ),
  })),
};
if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
else {
  process.stdout.write(
    `${ranks} ranks opening at once, first batch of ${batch} clips (table level); edge idle ${result.edge_idle_cpu_ms_per_s} ms CPU/s; ${result.request_errors_retried} requests failed and sent again; seeding ${result.seed_s} s\n`,
  );
  process.stdout.write(
    "objects     lazy  phase        req/rank (max)  KiB/rank  edge CPU ms (workerd)  per rank  ÷ smallest  client CPU ms  wall ms  routes per rank\n",
  );
  for (const r of result.rows)
    for (const [label, p, ratio] of [
      ["open", r.open, r.open_edge_cpu_vs_smallest],
      ["first batch", r.first_batch, r.first_batch_edge_cpu_vs_smallest],
    ] as const)
      process.stdout.write(
        `${String(r.objects).padEnd(11)} ${String(r.lazy).padEnd(5)} ${label.padEnd(12)} ${`${p.requests_per_rank} (${p.requests_per_rank_max})`.padStart(14)} ${(p.bytes_per_rank / 1024).toFixed(1).padStart(9)} ${`${p.edge_cpu_ms} (${p.edge_workerd_cpu_ms})`.padStart(22)} ${String(p.edge_cpu_ms_per_rank).padStart(9)} ${String(ratio).padStart(11)} ${String(p.client_cpu_ms).padStart(14)} ${String(p.wall_ms).padStart(8)}  ${JSON.stringify(p.by_route)}\n`,
      );
}
