/**
 * Range reads through the local edge (wrangler dev: workerd + local R2, signed URLs) side by
 * side with a baseline in the same run: a plain node:http server answering the same ranges of
 * the same bytes from a local file. Same client (undici), same ranges, same concurrency.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/edge-ranges.js [--mib 64] [--reads 256] [--range-kib 1024] [--concurrency 16] [--json]
 */
import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { request } from "undici";
import { signedObjectUrl } from "../common/sign.js";
import { pushDir } from "../sdk/push/index.js";
import { startLocalEdge } from "../sdk/dev/index.js";

const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "64" },
    reads: { type: "string", default: "256" },
    "range-kib": { type: "string", default: "1024" },
    concurrency: { type: "string", default: "16" },
    json: { type: "boolean", default: false },
  },
});
const SIZE = Number(values.mib) * 1024 * 1024;
const READS = Number(values.reads);
const SPAN = Number(values["range-kib"]) * 1024;
const CONCURRENCY = Number(values.concurrency);

/** The same pseudo-random ranges for both servers. */
function ranges(): [number, number][] {
  let s = 12345;
  return Array.from({ length: READS }, () => {
    s = (s * 1103515245 + 12345) >>> 0;
    const start = s % (SIZE - SPAN);
    return [start, start + SPAN - 1];
  });
}

async function readAll(
  url: (i: number) => string,
  spans: [number, number][],
): Promise<{ seconds: number; bytes: number }> {
  let next = 0;
  let bytes = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < spans.length) {
      const i = next++;
      const [a, b] = spans[i]!;
      const res = await request(url(i), { headers: { range: `bytes=${a}-${b}` } });
      if (res.statusCode !== 206) throw new Error(`status ${res.statusCode}`);
      for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { seconds: (performance.now() - t0) / 1000, bytes };
}

const dir = await mkdtemp(join(tmpdir(), "ec-bench-edge-"));
const data = join(dir, "data");
const file = join(data, "blob.bin");
await import("node:fs/promises").then((fs) => fs.mkdir(data));
await writeFile(file, randomBytes(SIZE));

const baseline = createServer((req, res) => {
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "")!;
  const [a, b] = [Number(m[1]), Number(m[2])];
  res.writeHead(206, { "content-length": b - a + 1, "content-range": `bytes ${a}-${b}/${SIZE}` });
  createReadStream(file, { start: a, end: b }).pipe(res);
});
await new Promise<void>((r) => baseline.listen(0, "127.0.0.1", r));
const baseUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}/blob.bin`;

const edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
try {
  const pushed = await pushDir({ dir: data, prefix: "bench", edge: edge.url, token: edge.token });
  if (pushed.failed) throw new Error("push failed");
  const url = await signedObjectUrl(edge.url, "bench/blob.bin", Math.floor(Date.now() / 1000) + 3600, edge.signingKey);
  const spans = ranges();
  await readAll(() => url, spans.slice(0, CONCURRENCY)); // warm both paths once
  await readAll(() => baseUrl, spans.slice(0, CONCURRENCY));
  const viaEdge = await readAll(() => url, spans);
  const plain = await readAll(() => baseUrl, spans);
  const mbps = (r: { seconds: number; bytes: number }) => r.bytes / 1e6 / r.seconds;
  const result = {
    sizeMiB: SIZE / 2 ** 20,
    reads: READS,
    rangeKiB: SPAN / 1024,
    concurrency: CONCURRENCY,
    putMBps: Number((pushed.bytes / 1e6 / pushed.seconds).toFixed(1)),
    edgeMBps: Number(mbps(viaEdge).toFixed(1)),
    baselineMBps: Number(mbps(plain).toFixed(1)),
    ratio: Number((mbps(viaEdge) / mbps(plain)).toFixed(3)),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    process.stdout.write(
      `edge ranges: ${READS} × ${SPAN / 1024} KiB, ${CONCURRENCY} in flight, ${result.sizeMiB} MiB object\n` +
        `  through the local edge (signed, workerd + local R2): ${result.edgeMBps} MB/s\n` +
        `  baseline (node:http from the same bytes on disk):    ${result.baselineMBps} MB/s\n` +
        `  ratio ${result.ratio}; PUT of the object ${result.putMBps} MB/s\n`,
    );
  }
} finally {
  await edge.stop();
  baseline.close();
  await rm(dir, { recursive: true, force: true });
}
