/**
 * Where a dataset-table page's time goes at open: each page of a kept open-scale dataset
 * fetched from the local edge, per page request → first byte and → last byte, (a) straight
 * from workerd one at a time (the edge's own time per page), (b) straight at 64 in flight
 * (workerd's concurrency), (c) through the WAN emulator (TLS, HTTP/2, RTT) at 64 in flight over
 * one HTTP/2 connection, and (d) several pages a request (`table/pages?names=…`, as readTable
 * fetches them) 64, 16 and 8 to a request; with the peak of requests in flight.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/table-pages.js --keep /tmp/columnar-keep-v2/n50000 [--rtt-ms 50] [--rounds 3]
 *
 * `--keep` is a directory left by `open-scale.js --keep DIR` (DIR/n<size>), read only.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Pool, request, type Dispatcher } from "undici";
import { gunzip } from "../common/dataset-table/digest.js";
import { decodeDirectory } from "../common/dataset-table/directory.js";
import { TableHeadV1 } from "../common/schema/index.js";
import { startLocalEdge } from "../sdk/dev/index.js";
import { freePort } from "../sdk/dev/free-port.js";
import { h2Agent } from "../sdk/source/edge-fetch.js";
import { startWanEmulator } from "../test/helpers/wan-emulator.js";

const { values } = parseArgs({
  options: {
    keep: { type: "string" },
    "rtt-ms": { type: "string", default: "50" },
    rounds: { type: "string", default: "3" },
  },
});
if (!values.keep) throw new Error("Expected --keep DIR (a dataset seeded by open-scale.js) but received nothing");
const PREFIX = "scale";
const q = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const ms = (x: number) => x.toFixed(1);

interface PageTime {
  start: number;
  firstByte: number;
  lastByte: number;
  bytes: number;
}

async function fetchPages(
  base: string,
  token: string,
  names: string[],
  dispatcher: Dispatcher,
  concurrency: number,
  sep = "/",
): Promise<{ times: PageTime[]; wall: number; peak: number }> {
  const times: PageTime[] = [];
  let next = 0;
  let inFlight = 0;
  let peak = 0;
  const t0 = performance.now();
  const worker = async () => {
    for (let i = next++; i < names.length; i = next++) {
      const start = performance.now();
      inFlight++;
      peak = Math.max(peak, inFlight);
      const res = await request(`${base}/table/pages${sep}${names[i]}`, {
        headers: { authorization: `Bearer ${token}` },
        dispatcher,
      });
      const firstByte = performance.now();
      const body = await res.body.arrayBuffer();
      const lastByte = performance.now();
      inFlight--;
      if (res.statusCode !== 200) throw new Error(`page ${names[i]} answered ${res.statusCode}`);
      times.push({
        start: start - t0,
        firstByte: firstByte - start,
        lastByte: lastByte - start,
        bytes: body.byteLength,
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, worker));
  return { times, wall: performance.now() - t0, peak };
}

/** The same pages `perRequest` to a request (GET table/pages?names=…), `concurrency` requests in flight. */
async function fetchBatches(
  base: string,
  token: string,
  names: string[],
  dispatcher: Dispatcher,
  perRequest: number,
  concurrency: number,
): Promise<{ times: PageTime[]; wall: number; peak: number }> {
  const batches = Array.from({ length: Math.ceil(names.length / perRequest) }, (_, b) =>
    names.slice(b * perRequest, (b + 1) * perRequest),
  );
  return fetchPages(
    base,
    token,
    batches.map((b) => `?names=${b.join(",")}`),
    dispatcher,
    concurrency,
    "",
  );
}

function report(label: string, r: { times: PageTime[]; wall: number; peak: number }): void {
  const fb = r.times.map((t) => t.firstByte);
  const lb = r.times.map((t) => t.lastByte);
  const kb = r.times.reduce((s, t) => s + t.bytes, 0) / r.times.length / 1024;
  process.stdout.write(
    `${label}: ${r.times.length} pages (${kb.toFixed(0)} KiB each on the wire) in ${ms(r.wall)} ms, peak ${r.peak} in flight; ` +
      `request→first byte p50 ${ms(q(fb, 0.5))} p90 ${ms(q(fb, 0.9))} max ${ms(q(fb, 1))} ms; ` +
      `→last byte p50 ${ms(q(lb, 0.5))} p90 ${ms(q(lb, 0.9))} max ${ms(q(lb, 1))} ms\n`,
  );
}

async function main(): Promise<void> {
  const dir = values.keep!;
  const port = await freePort();
  const wan = await startWanEmulator({
    target: `http://127.0.0.1:${port}`,
    rttMs: Number(values["rtt-ms"]),
    bandwidthBytesPerSec: 12.5e6,
  });
  const edge = await startLocalEdge({
    port,
    quiet: true,
    varsDir: dir,
    persistDir: join(dir, "r2"),
    publicOrigin: wan.url,
  });
  const direct = new Pool(edge.url, { connections: 64 });
  try {
    const base = `${edge.url}/v1/datasets/${PREFIX}`;
    const headRes = await request(`${base}/table`, {
      headers: { authorization: `Bearer ${edge.token}` },
      dispatcher: direct,
    });
    const signed = (await headRes.body.json()) as { payload: string };
    const head = TableHeadV1.parse(JSON.parse(signed.payload));
    // Head format 2 names directory pages; the pages are what they list.
    const names: string[] = [];
    if (head.version === 1) names.push(...head.pages.map((p) => p.name));
    else
      for (const d of head.directories) {
        const res = await request(`${base}/table/pages/${d.name}`, {
          headers: { authorization: `Bearer ${edge.token}` },
          dispatcher: direct,
        });
        // undici leaves the route's gzip to the caller.
        const bytes = await gunzip(new Uint8Array(await res.body.arrayBuffer()));
        names.push(...decodeDirectory(bytes).map((p) => p.name));
      }
    const wanBase = `${wan.url}/v1/datasets/${PREFIX}`;
    // Warm the isolate and the OS page cache of the local R2, as a deployed edge is.
    await fetchPages(base, edge.token, names, direct, 8);
    for (let r = 0; r < Number(values.rounds); r++) {
      // The floor of any request to this workerd (routing, no R2, no token): the health route,
      // one at a time and 50 at once, to tell workerd's own serialization from the page route's.
      const h0 = performance.now();
      for (let i = 0; i < names.length; i++)
        await (await request(`${edge.url}/v1/health`, { dispatcher: direct })).body.dump();
      const h1 = performance.now();
      await Promise.all(
        names.map(async () => (await request(`${edge.url}/v1/health`, { dispatcher: direct })).body.dump()),
      );
      process.stdout.write(
        `direct health: ${ms((h1 - h0) / names.length)} ms per request 1 in flight; ${names.length} at once in ${ms(performance.now() - h1)} ms\n`,
      );
      report("direct, 1 in flight", await fetchPages(base, edge.token, names, direct, 1));
      report("direct, 64 in flight", await fetchPages(base, edge.token, names, direct, 64));
      // A fresh connection per round, as a fresh rank has (its TLS handshake is in the head's time),
      // through the agent the SDK uses: HTTP/2 streams share it instead of a connection each.
      const overWan = h2Agent({ ca: wan.ca });
      const t = performance.now();
      const h = await request(`${wanBase}/table`, {
        headers: { authorization: `Bearer ${edge.token}` },
        dispatcher: overWan,
      });
      await h.body.arrayBuffer();
      process.stdout.write(`WAN head (new connection): ${ms(performance.now() - t)} ms\n`);
      report("WAN h2, 64 in flight", await fetchPages(wanBase, edge.token, names, overWan, 64));
      // Several pages a request (the route readTable uses): responses instead of pages in the report.
      for (const per of [64, 16, 8])
        report(
          `WAN h2, ${per} pages a request, 8 requests in flight (responses)`,
          await fetchBatches(wanBase, edge.token, names, overWan, per, 8),
        );
      await overWan.close();
    }
  } finally {
    await direct.close();
    await edge.stop();
  }
  process.exit(0);
}

await main();
