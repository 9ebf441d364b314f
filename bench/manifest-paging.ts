/**
 * Manifest paging cost in workerd: a real `wrangler dev` edge with a local R2 holding N
 * objects (default 10,000); every page of GET /v1/datasets/{prefix}/manifest timed from the
 * client, side by side with GET /v1/health (the request floor) in the same run, plus the
 * client's Ed25519 verification of each page.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/manifest-paging.js [--objects 10000] [--rounds 5] [--json]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { verifyManifest } from "../common/manifest-sign.js";
import { PublicKeysV1, SignedManifestV1 } from "../common/schema/index.js";
import { startLocalEdge, type LocalEdge } from "../sdk/dev/index.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "10000" },
    rounds: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
  },
});
const OBJECTS = Number(values.objects);
const ROUNDS = Number(values.rounds);
const PREFIX = "bench-manifest";

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!;

async function seed(edge: LocalEdge): Promise<void> {
  const body = new Uint8Array(256);
  let next = 0;
  const worker = async () => {
    while (next < OBJECTS) {
      const i = next++;
      // wrangler dev reloads the Worker when sources change and answers 503 meanwhile; a PUT is safe to repeat.
      for (let attempt = 0; ; attempt++) {
        const res = await fetch(`${edge.url}/v1/objects/${PREFIX}/clip-${String(i).padStart(6, "0")}.mp4`, {
          method: "PUT",
          body,
          headers: { authorization: `Bearer ${edge.token}` },
        });
        if (res.status === 201) break;
        if (res.status !== 503 || attempt >= 5) throw new Error(`PUT ${i} answered ${res.status}: ${await res.text()}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

interface PagingRun {
  pageMs: number[];
  verifyMs: number[];
  bytes: number[];
  objects: number;
}

async function pageAll(edge: LocalEdge, keys: PublicKeysV1, limit: number): Promise<PagingRun> {
  const run: PagingRun = { pageMs: [], verifyMs: [], bytes: [], objects: 0 };
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ limit: String(limit), ...(cursor ? { cursor } : {}) });
    const t0 = performance.now();
    const res = await fetch(`${edge.url}/v1/datasets/${PREFIX}/manifest?${q}`, {
      headers: { authorization: `Bearer ${edge.token}` },
    });
    const text = await res.text();
    run.pageMs.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`manifest page answered ${res.status}: ${text}`);
    run.bytes.push(text.length);
    const t1 = performance.now();
    const page = await verifyManifest(SignedManifestV1.parse(JSON.parse(text)), keys);
    run.verifyMs.push(performance.now() - t1);
    run.objects += page.objects.length;
    cursor = page.cursor;
  } while (cursor);
  if (run.objects !== OBJECTS) throw new Error(`paging returned ${run.objects} objects, expected ${OBJECTS}`);
  return run;
}

async function floor(edge: LocalEdge, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await (await fetch(`${edge.url}/v1/health`)).text();
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function mainBench(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "ec-bench-manifest-"));
  const edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  try {
    const seedStart = performance.now();
    await seed(edge);
    const seedMs = performance.now() - seedStart;
    const keys = PublicKeysV1.parse(await (await fetch(`${edge.url}/v1/keys`)).json());
    await pageAll(edge, keys, 1000); // warm the isolate and the signer
    const results: Record<string, unknown>[] = [];
    for (const limit of [1000, 250]) {
      const page: number[] = [],
        verify: number[] = [],
        totals: number[] = [],
        bytes: number[] = [],
        health: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        // Alternate the baseline and the subject so drift hits both alike.
        health.push(...(await floor(edge, Math.ceil(OBJECTS / limit))));
        const run = await pageAll(edge, keys, limit);
        page.push(...run.pageMs);
        verify.push(...run.verifyMs);
        bytes.push(...run.bytes);
        totals.push(run.pageMs.reduce((a, b) => a + b, 0));
      }
      results.push({
        limit,
        pages: Math.ceil(OBJECTS / limit),
        pageMsMedian: +median(page).toFixed(2),
        pageMsP95: +p95(page).toFixed(2),
        usPerObject: +((median(page) * 1000) / limit).toFixed(1),
        wholeManifestMsMedian: +median(totals).toFixed(1),
        healthMsMedian: +median(health).toFixed(2),
        pageOverHealth: +(median(page) / median(health)).toFixed(1),
        verifyMsMedian: +median(verify).toFixed(2),
        pageKiB: +(median(bytes) / 1024).toFixed(1),
      });
    }
    const report = { objects: OBJECTS, rounds: ROUNDS, seedSeconds: +(seedMs / 1000).toFixed(1), results };
    if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    else {
      process.stdout.write(
        `manifest paging, ${OBJECTS} objects, ${ROUNDS} rounds (seeded in ${report.seedSeconds} s)\n`,
      );
      for (const r of results) process.stdout.write(`${JSON.stringify(r)}\n`);
    }
  } finally {
    await edge.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await mainBench();
