/**
 * Time to plan a dataset of many small videos through the WAN emulator (TLS, RTT): what
 * `open()` does before its first batch — keys, every manifest page, then every object's index
 * — with the planner fetching indexes at several concurrencies, side by side in one run (rounds
 * alternate, fresh connections each). The first is the baseline the ratios divide by.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-plan.js [--objects 400] [--rtt-ms 50] [--rounds 3] [--concurrency 16,64] [--json]
 */
import { link, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Agent, setGlobalDispatcher } from "undici";
import { fetchIndex, fetchManifest } from "../common/manifest-client.js";
import { resolveOptions } from "../sdk/internal.js";
import { IndexCache } from "../sdk/pipeline/index-cache.js";
import { planDataset } from "../sdk/pipeline/planner.js";
import type { DatasetSource } from "../sdk/source/source.js";
import { makeVideo } from "../test/helpers/make-video.js";
import { startTestbed } from "./compare/testbed.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "400" },
    "rtt-ms": { type: "string", default: "50" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "16,64" },
    json: { type: "boolean", default: false },
  },
});
const OBJECTS = Number(values.objects);
const ROUNDS = Number(values.rounds);
const LEVELS = values.concurrency.split(",").map(Number);

const work = await mkdtemp(join(tmpdir(), "ec-bench-open-"));
try {
  const video = await makeVideo(work, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6, name: "source.mp4" });
  const files: string[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    const file = join(work, `clip-${String(i).padStart(5, "0")}.mp4`);
    await link(video, file);
    files.push(file);
  }
  const bed = await startTestbed({
    files,
    prefix: "bench-open",
    workDir: work,
    rttMs: Number(values["rtt-ms"]),
    bandwidthBytesPerSec: 12.5e6,
  });
  try {
    const options = resolveOptions({ frames: 4 });
    const ms = new Map<number, number[]>(LEVELS.map((c) => [c, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of LEVELS) {
        // Fresh connections per run, as a new training process has: TLS handshakes included.
        const agent = new Agent({ connect: { ca: bed.wan.ca } });
        setGlobalDispatcher(agent);
        const t0 = performance.now();
        const manifest = await fetchManifest(bed.datasetUrl, { token: bed.edge.token });
        const urls = new Map(manifest.objects.map((o) => [o.key, o.indexUrl]));
        const source = { index: (o: { key: string }) => fetchIndex(urls.get(o.key)!) } as unknown as DatasetSource;
        const listing = {
          objects: manifest.objects.map((o) => ({ key: o.key, size: o.size, etag: o.etag, kind: o.kind })),
          shards: manifest.shards.map((s) => ({ objects: Array.from({ length: s.count }, (_, i) => s.first + i) })),
        };
        const { plan } = await planDataset(listing, new IndexCache(source), options, c);
        ms.get(c)!.push(performance.now() - t0);
        if (plan.objects.length !== OBJECTS || plan.total === 0)
          throw new Error(`planned ${plan.objects.length} objects (${plan.total} clips), expected ${OBJECTS}`);
        await agent.close();
      }
    }
    const base = median(ms.get(LEVELS[0]!)!);
    const rows = LEVELS.map((c) => ({
      concurrency: c,
      plan_ms: Math.round(median(ms.get(c)!)),
      vs_first: Number((base / median(ms.get(c)!)).toFixed(2)),
    }));
    const result = { objects: OBJECTS, rtt_ms: Number(values["rtt-ms"]), rounds: ROUNDS, rows };
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else
      for (const r of rows)
        process.stdout.write(
          `${OBJECTS} objects, ${result.rtt_ms} ms RTT, index concurrency ${r.concurrency}: plan in ${r.plan_ms} ms (×${r.vs_first} the speed of ${LEVELS[0]})\n`,
        );
  } finally {
    await bed.close();
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
