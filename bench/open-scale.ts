/**
 * Start-up against dataset size: time to first batch, requests and bytes at open, and RSS of a
 * fresh process (one rank) opening datasets of 1,000 / 10,000 / 50,000 small videos planned
 * from the edge's dataset table, through the WAN emulator (TLS, HTTP/2, RTT) — plus today's
 * path (every object's index) at the smallest size, side by side. Each dataset is seeded
 * straight into the persisted local R2 (objects, their cached indexes and one table
 * generation, built by the edge's own code), as the background indexer would have left it.
 * Also measures what indexing one object costs the Worker: CPU of the index build and its
 * R2 operations, for bench/README.md "Scale on paper".
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-scale.js [--sizes 1000,10000,50000] [--rtt-ms 50] [--rounds 3] [--indexes-at 1000] [--keep DIR] [--client-node-args=--cpu-prof] [--profile-open DIR] [--json]
 *
 * `--profile-open DIR` writes a CPU profile of each client's open() alone into DIR.
 * `--keep DIR` seeds each size once into DIR/n<size> and reuses it on later runs (seeding
 * 50,000 objects takes minutes); `--client-node-args` are passed to each client process.
 */
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { tableEntry } from "../common/dataset-table/entry.js";
import { buildGeneration } from "../common/dataset-table/generation.js";
import { PAGE_FORMAT_VERSION } from "../common/dataset-table/page-codec.js";
import { tableKeys } from "../common/dataset-table/table-keys.js";
import { manifestSigner, signJson } from "../common/manifest-sign.js";
import { buildIndex, bytesReader, encodeIndex } from "../common/media-index/index.js";
import type { IndexV1, TableEntryV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { spawnGroup } from "../sdk/dev/child-group.js";
import { ensureDevVars, startLocalEdge } from "../sdk/dev/index.js";
import { freePort } from "../sdk/dev/free-port.js";
import { makeVideo } from "../test/helpers/make-video.js";
import { seedLocalR2, type SeedObject } from "../test/helpers/seed-r2.js";
import { startWanEmulator, type WanEmulator } from "../test/helpers/wan-emulator.js";
import { trackInFlight } from "./open-scale/in-flight.js";
import { keptSeed } from "./open-scale/kept-seed.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,10000,50000" },
    "rtt-ms": { type: "string", default: "50" },
    rounds: { type: "string", default: "3" },
    "indexes-at": { type: "string", default: "1000" },
    json: { type: "boolean", default: false },
    keep: { type: "string" },
    "client-node-args": { type: "string", default: "" },
    // A client's open() and first batch take seconds; one still running after this is stuck.
    "client-limit-s": { type: "string", default: "120" },
    // Writes a CPU profile of each client's open() alone (first batch excluded) into this folder.
    "profile-open": { type: "string" },
    // Internal: one measured open() in a fresh process (a rank), printing one JSON line.
    client: { type: "string" },
    token: { type: "string" },
    mode: { type: "string", default: "table" },
  },
});
const PREFIX = "scale";
/** A client's open() and first batch take seconds; one still running after this is stuck. */
const CLIENT_LIMIT_S = Number(values["client-limit-s"]);

/** One rank: open() and its first batch, counted at the emulator (requests, bytes) and in-process (RSS). */
async function client(url: string, token: string, mode: string): Promise<void> {
  // What this client waits on, written to stderr when the parent finds it stuck (SIGUSR2).
  const flight = trackInFlight();
  let stage = "starting";
  process.on("SIGUSR2", () =>
    process.stderr.write(`[in-flight] client ${process.pid} at: ${stage}\n${flight.report()}`),
  );
  const { open } = await import("../sdk/index.js");
  const { EdgeSource } = await import("../sdk/source/edge-source.js");
  const { inProcessCache } = await import("../sdk/source/cache-client.js");
  // Not through the global fetch: a process that has used it keeps its dispatcher for the edge too (edge-fetch.ts).
  const { Agent, request } = await import("undici");
  const statsAgent = new Agent();
  const wanStats = async () =>
    (await (await request(`${new URL(url).origin}/__wan/stats`, { dispatcher: statsAgent })).body.json()) as {
      requests: number;
      bytesSent: number;
    };
  const before = await wanStats();
  const profiler = values["profile-open"] ? await startProfile() : undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  stage = "open()";
  const source = new EdgeSource(url, token, await inProcessCache(new URL(url).origin, 64 << 20), {
    table: mode === "table",
  });
  const ds = await open(
    url,
    { token, frames: 4, batch: 8, device: "cpu", prefetch: 8, workers: 2, seed: 1 },
    { source },
  );
  const tOpen = performance.now();
  const cpuOpen = process.cpuUsage(cpu0);
  if (profiler) await writeFile(join(values["profile-open"]!, `open-${process.pid}.cpuprofile`), await profiler());
  const atOpen = await wanStats();
  stage = "first batch";
  const it = ds[Symbol.asyncIterator]();
  const first = await it.next();
  stage = "closing";
  const tFirst = performance.now();
  const atFirst = await wanStats();
  const rss = process.memoryUsage().rss;
  if (first.done) throw new Error("no first batch");
  const stats = ds.stats();
  await it.return(undefined);
  await ds.close();
  await statsAgent.close();
  process.stdout.write(
    `${JSON.stringify({
      open_s: (tOpen - t0) / 1000,
      open_cpu_s: (cpuOpen.user + cpuOpen.system) / 1e6,
      first_batch_s: (tFirst - t0) / 1000,
      sdk_first_batch_s: stats.first_batch_s,
      requests_at_open: atOpen.requests - before.requests,
      bytes_at_open: atOpen.bytesSent - before.bytesSent,
      requests_to_first_batch: atFirst.requests - before.requests,
      bytes_to_first_batch: atFirst.bytesSent - before.bytesSent,
      rss_mb: rss / 2 ** 20,
      generation: ds.generation ?? null,
      clips: ds.totalClips,
    })}\n`,
  );
}

/** Starts V8's sampling profiler in this process; the function returned stops it and gives the profile's JSON. */
async function startProfile(): Promise<() => Promise<string>> {
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  return async () => {
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    return JSON.stringify(profile);
  };
}

/** A unique small video per object: the template plus a trailing `free` box with the object's number (its own etag). */
function objectBytes(template: Uint8Array, i: number): Uint8Array {
  const out = new Uint8Array(template.length + 16);
  out.set(template);
  const view = new DataView(out.buffer, template.length);
  view.setUint32(0, 16);
  out.set(new TextEncoder().encode("free"), template.length + 4);
  view.setBigUint64(8, BigInt(i));
  return out;
}

/** Seeds objects, their cached indexes and one table generation into the local R2 of `persistDir` (`objects: false`: the table only). */
async function seed(
  persistDir: string,
  manifestKey: string,
  template: Uint8Array,
  n: number,
  withObjects = true,
): Promise<{ seconds: number }> {
  const t0 = performance.now();
  const base = await buildIndex(bytesReader(template), { key: "template.mp4", etag: '"t"' });
  if (base.kind !== "video") throw new Error(`the template video indexes as ${base.kind}`);
  const entries: TableEntryV1[] = [];
  function* objects(): Generator<SeedObject> {
    for (let i = 0; i < n; i++) {
      const key = `${PREFIX}/o-${String(i).padStart(6, "0")}.mp4`;
      const bytes = objectBytes(template, i);
      // R2's ETag of a single-part upload is the MD5 of its bytes.
      const md5 = createHash("md5").update(bytes).digest("hex");
      const index: IndexV1 = { ...base, key, etag: `"${md5}"`, size: bytes.length };
      entries.push(tableEntry(index));
      yield { key, body: bytes };
      yield {
        key: indexKeySync(md5, key),
        body: encodeIndex(index),
        httpMetadata: { contentType: "application/vnd.ec.index.v1" },
        customMetadata: { kind: "video", key },
      };
    }
  }
  if (withObjects) await seedLocalR2(persistDir, objects());
  else for (const _ of objects());
  const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: PREFIX,
    shardBytes: DEFAULT_SHARD_TARGET_BYTES,
    now: Math.floor(Date.now() / 1000),
    pinsApart: true,
  });
  const body = JSON.stringify(await signJson(head, await manifestSigner(manifestKey)));
  await seedLocalR2(persistDir, [
    ...pages.flatMap((p) => [
      {
        key: tableKeys.page(PREFIX, p.name),
        body: p.gz,
        httpMetadata: { contentType: "application/octet-stream", contentEncoding: "gzip" },
      },
      ...(p.pins
        ? [
            {
              key: tableKeys.pins(PREFIX, p.name),
              body: p.pins,
              httpMetadata: { contentType: "application/octet-stream", contentEncoding: "gzip" },
            },
          ]
        : []),
    ]),
    { key: tableKeys.generation(PREFIX, head.generation), body },
    { key: tableKeys.head(PREFIX), body },
  ]);
  return { seconds: (performance.now() - t0) / 1000 };
}

/**
 * Seeds `dir` (its .dev.vars and local R2) unless a finished seed of the same size is there
 * (`seeded.json`, written last): a kept directory skips minutes of seeding on a rerun. One
 * seeded with another page format (a build before or after a codec change) gets its table
 * rewritten in this build's format; its objects are kept.
 */
async function seedOnce(dir: string, template: Uint8Array, n: number): Promise<{ seconds: number }> {
  const mark = join(dir, "seeded.json");
  const kept = await keptSeed(dir, n, PAGE_FORMAT_VERSION);
  if (kept.kind === "reuse") return { seconds: kept.mark.seconds };
  process.stderr.write(kept.notice);
  if (kept.kind === "retable") {
    await seed(join(dir, "r2"), ensureDevVars(dir).EC_MANIFEST_KEY, template, n, false);
    await writeFile(mark, JSON.stringify({ ...kept.mark, pageFormat: PAGE_FORMAT_VERSION }));
    return { seconds: kept.mark.seconds };
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const seeded = await seed(join(dir, "r2"), ensureDevVars(dir).EC_MANIFEST_KEY, template, n);
  await writeFile(mark, JSON.stringify({ objects: n, seconds: seeded.seconds, pageFormat: PAGE_FORMAT_VERSION }));
  return seeded;
}

/** indexCacheKey for keys far below R2's cap (no digest needed), usable in a synchronous generator. */
function indexKeySync(md5: string, key: string): string {
  return `_ec/index/v1/${md5}/${key}`;
}

function runClient(
  url: string,
  token: string,
  mode: string,
  caFile: string,
  wan: WanEmulator,
): Promise<Record<string, number>> {
  const nodeArgs = values["client-node-args"].split(" ").filter(Boolean);
  // Its own group: a run stopped by a signal (or killed) takes the client with it.
  const group = spawnGroup(
    process.execPath,
    [
      ...nodeArgs,
      process.argv[1]!,
      ...["--client", url, "--token", token, "--mode", mode],
      ...(values["profile-open"] ? ["--profile-open", values["profile-open"]] : []),
    ],
    { env: { ...process.env, NODE_EXTRA_CA_CERTS: caFile }, echo: "stderr" },
  );
  let out = "";
  group.child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  // A client that stops (seen at 50,000 objects, rarely) fails the run with where it was, instead of a silent hang.
  let kill: NodeJS.Timeout | undefined;
  const limit = setTimeout(() => {
    process.stderr.write(
      `[open-scale] a client of ${url} has not finished in ${CLIENT_LIMIT_S} s: killing it\n` +
        `[open-scale] its emulator: ${wan.stats.requests} requests, ${wan.stats.inFlight} in flight, ${wan.stats.sessions} sessions\n` +
        wan
          .active()
          .map((a) => `[open-scale]   ${a.method} ${a.path} (${a.phase}, ${a.ms} ms)\n`)
          .join(""),
    );
    // The client writes what it has in flight, then goes.
    group.signal("SIGUSR2");
    kill = setTimeout(() => group.signal("SIGKILL"), 2000);
  }, CLIENT_LIMIT_S * 1000);
  return group.exited.then((code) => {
    clearTimeout(limit);
    clearTimeout(kill);
    if (code === 0) return JSON.parse(out.trim().split("\n").pop()!) as Record<string, number>;
    throw new Error(`client exited ${code}: ${out}`);
  });
}

/** What indexing one object costs the Worker: CPU of the build (the same code workerd runs) and its R2 operations. */
async function indexCost(template: Uint8Array): Promise<{ cpu_ms: number; range_reads: number }> {
  let reads = 0;
  const reader = { size: template.length, read: async (o: number, l: number) => (reads++, template.slice(o, o + l)) };
  await buildIndex(reader, { key: "w/warm.mp4", etag: '"w"' });
  const runs = 200;
  reads = 0;
  const c0 = process.cpuUsage();
  for (let i = 0; i < runs; i++) encodeIndex(await buildIndex(reader, { key: `w/${i}.mp4`, etag: `"${i}"` }));
  const c = process.cpuUsage(c0);
  return { cpu_ms: (c.user + c.system) / 1000 / runs, range_reads: reads / runs };
}

async function mainBench(): Promise<void> {
  const sizes = values.sizes.split(",").map(Number);
  const rounds = Number(values.rounds);
  const indexesAt = Number(values["indexes-at"]);
  const work = await mkdtemp(join(tmpdir(), "ec-bench-scale-"));
  const rows: Record<string, unknown>[] = [];
  try {
    const template = new Uint8Array(
      await readFile(
        await makeVideo(work, {
          codec: "h264",
          width: 64,
          height: 48,
          frames: 24,
          gop: 6,
          faststart: true,
          name: "t.mp4",
        }),
      ),
    );
    const cost = await indexCost(template);
    // A more typical clip: 10 s at 30 fps (300 samples), GOP 30.
    const longer = new Uint8Array(
      await readFile(
        await makeVideo(work, { codec: "h264", width: 320, height: 180, frames: 300, gop: 30, name: "long.mp4" }),
      ),
    );
    const costLong = await indexCost(longer);
    // Every size is seeded and served at once, and the rounds alternate between them, so drift
    // on a shared machine hits every size alike (ratios side by side in one run).
    const beds = [];
    try {
      for (const n of sizes) {
        const dir = values.keep ? join(values.keep, `n${n}`) : await mkdtemp(join(work, `n${n}-`));
        const seeded = await seedOnce(dir, template, n);
        const tEdge = performance.now();
        const port = await freePort();
        const wan = await startWanEmulator({
          target: `http://127.0.0.1:${port}`,
          rttMs: Number(values["rtt-ms"]),
          bandwidthBytesPerSec: 12.5e6,
          statsPath: "/__wan/stats",
        });
        beds.push({
          n,
          seeded,
          wan,
          edge: undefined as Awaited<ReturnType<typeof startLocalEdge>> | undefined,
          dir,
          caFile: join(dir, "wan-ca.pem"),
        });
        beds.at(-1)!.edge = await startLocalEdge({
          port,
          quiet: true,
          varsDir: dir,
          persistDir: join(dir, "r2"),
          publicOrigin: wan.url,
        });
        await writeFile(beds.at(-1)!.caFile, wan.ca);
        process.stderr.write(
          `[open-scale] ${n} objects: edge up in ${((performance.now() - tEdge) / 1000).toFixed(1)} s\n`,
        );
      }
      const runs = new Map<string, Record<string, number>[]>();
      const modesOf = (n: number) => (n === indexesAt ? ["table", "indexes"] : ["table"]);
      for (const b of beds)
        await runClient(`${b.wan.url}/v1/datasets/${PREFIX}`, b.edge!.token, "table", b.caFile, b.wan); // warm each isolate, as a deployed edge is
      for (let r = 0; r < rounds; r++) {
        for (const b of beds) {
          for (const m of modesOf(b.n)) {
            const got = await runClient(`${b.wan.url}/v1/datasets/${PREFIX}`, b.edge!.token, m, b.caFile, b.wan);
            // One line per client: a run that stops shows where (a client, or the edges' shutdown below).
            process.stderr.write(
              `[open-scale] round ${r + 1}, ${b.n} objects, ${m}: first batch ${got.first_batch_s!.toFixed(3)} s\n`,
            );
            runs.set(`${b.n}/${m}`, [...(runs.get(`${b.n}/${m}`) ?? []), got]);
          }
        }
      }
      for (const b of beds) {
        for (const m of modesOf(b.n)) {
          const all = runs.get(`${b.n}/${m}`)!;
          const pick = (k: string) => median(all.map((x) => x[k]!));
          rows.push({
            objects: b.n,
            plan: m,
            seed_s: Number(b.seeded.seconds.toFixed(1)),
            first_batch_s: Number(pick("first_batch_s").toFixed(3)),
            open_s: Number(pick("open_s").toFixed(3)),
            open_cpu_s: Number(pick("open_cpu_s").toFixed(3)),
            requests_at_open: pick("requests_at_open"),
            bytes_at_open: pick("bytes_at_open"),
            bytes_at_open_per_object: Number((pick("bytes_at_open") / b.n).toFixed(1)),
            requests_to_first_batch: pick("requests_to_first_batch"),
            bytes_to_first_batch: pick("bytes_to_first_batch"),
            rss_mb: Number(pick("rss_mb").toFixed(0)),
          });
        }
      }
    } finally {
      process.stderr.write("[open-scale] stopping the emulators and edges\n");
      for (const b of beds) {
        await b.wan.close();
        await b.edge?.stop();
      }
    }
    const base = rows.find((r) => r.plan === "table" && r.objects === sizes[0]) as { first_batch_s: number };
    for (const r of rows) r.vs_smallest = Number(((r.first_batch_s as number) / base.first_batch_s).toFixed(2));
    const result = {
      rtt_ms: Number(values["rtt-ms"]),
      rounds,
      index_cpu_ms_per_object: Number(cost.cpu_ms.toFixed(3)),
      index_range_reads_per_object: cost.range_reads,
      index_cpu_ms_300_samples: Number(costLong.cpu_ms.toFixed(3)),
      index_range_reads_300_samples: costLong.range_reads,
      rows,
    };
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(
        `indexing one object: ${result.index_cpu_ms_per_object} ms CPU, ${cost.range_reads} range reads (24 samples); ${result.index_cpu_ms_300_samples} ms, ${costLong.range_reads} reads (300 samples)\n`,
      );
      for (const r of rows) {
        process.stdout.write(
          `${r.objects} objects, plan from ${r.plan}: first batch ${r.first_batch_s} s (×${r.vs_smallest} of ${sizes[0]}), open ${r.open_s} s (${r.open_cpu_s} s CPU), ` +
            `${r.requests_at_open} requests / ${r.bytes_at_open} B at open (${r.bytes_at_open_per_object} B/object), ` +
            `${r.requests_to_first_batch} requests / ${r.bytes_to_first_batch} B to the first batch, RSS ${r.rss_mb} MB (seeded in ${r.seed_s} s)\n`,
        );
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (values.client) await client(values.client, values.token!, values.mode);
else await mainBench();
