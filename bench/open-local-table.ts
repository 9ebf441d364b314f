/**
 * open() of an s3:// prefix that has no edge-written table, against a loopback S3-compatible
 * server (s3rver) holding N small .npy objects: the bare listing every open pays, the first open (every index built from range
 * GETs), the second (planned from the local table), the second as it was before local tables
 * (every index read back from the per-object disk cache), an open after 1% of the objects
 * changed (spread over the key range) and one after 10 adjacent objects changed. Per row: wall
 * time of open(), HTTP requests the server received, index range GETs, objects whose index was
 * read, and local table pages read and written.
 *
 * `--index-bytes N` runs instead, per size, an open that streams its whole epoch over an index
 * cache bound to N bytes (far below its indexes: the epoch evicts and rebuilds them), then the
 * open after it: whether that open still finds the local table, or indexes the prefix again.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-local-table.js [--objects 1000,5000] [--index-bytes 16384] [--json]
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { open } from "../sdk/index.js";
import { openS3Source } from "../sdk/source/s3/index.js";
import { startS3Server, type S3TestServer } from "../test/helpers/s3-server.js";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "1000,5000" },
    "index-bytes": { type: "string" },
    json: { type: "boolean", default: false },
  },
});

/** A .npy of 8 bytes of uint8, each `fill`. */
function npy(fill: number): Uint8Array {
  const header = "{'descr': '|u1', 'fortran_order': False, 'shape': (8,), }";
  const pad = 64 - ((10 + header.length + 1) % 64);
  const text = new TextEncoder().encode(`NUMPY\x01\x00--${header}${" ".repeat(pad)}\n`);
  const bytes = new Uint8Array(1 + text.length + 8).fill(fill);
  bytes[0] = 0x93;
  bytes.set(text, 1);
  const len = header.length + pad + 1;
  bytes[8] = len & 0xff;
  bytes[9] = len >> 8;
  return bytes;
}

async function openOnce(
  s3: S3TestServer,
  prefix: string,
  indexCacheDir: string,
  o: { indexCacheBytes?: number; epoch?: boolean } = {},
) {
  const url = `s3://${s3.bucket}/${prefix}`;
  const options = { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials };
  const bound = o.indexCacheBytes === undefined ? {} : { indexCacheBytes: o.indexCacheBytes };
  const source = await openS3Source(new URL(url), { ...options, indexCacheDir, ...bound }, {});
  const before = s3.requests;
  const t0 = performance.now();
  const ds = await open(url, { ...options, device: "cpu", batch: 1 }, { source });
  const seconds = (performance.now() - t0) / 1000;
  const requests = s3.requests - before;
  const c = source.counters();
  if (o.epoch) for await (const _ of ds);
  await ds.close();
  return {
    seconds,
    clips: ds.totalClips,
    requests,
    indexRequests: c.indexRequests,
    indexesRead: c.indexHits + c.indexMisses,
    pagesRead: c.tablePagesRead,
    pagesWritten: c.tablePagesWritten,
  };
}

/** The bare listing (ListObjectsV2 pages) that every open pays, for scale. */
async function listOnce(s3: S3TestServer, prefix: string, indexCacheDir: string) {
  const url = new URL(`s3://${s3.bucket}/${prefix}`);
  const source = await openS3Source(
    url,
    { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials, indexCacheDir },
    {},
  );
  const before = s3.requests;
  const t0 = performance.now();
  const objects = await source.objects();
  const seconds = (performance.now() - t0) / 1000;
  await source.close();
  return {
    seconds,
    clips: objects.length,
    requests: s3.requests - before,
    indexRequests: 0,
    indexesRead: 0,
    pagesRead: 0,
    pagesWritten: 0,
  };
}

const s3 = await startS3Server();
const dir = await mkdtemp(join(tmpdir(), "ec-bench-local-table-"));
const rows: Record<string, unknown>[] = [];
try {
  for (const n of values.objects.split(",").map(Number)) {
    const prefix = `n${n}`;
    const key = (i: number) => `${prefix}/${String(i).padStart(7, "0")}.npy`;
    await s3.seed(Array.from({ length: n }, (_, i) => ({ key: key(i), body: npy(1) })));
    const cache = join(dir, prefix);
    if (values["index-bytes"] !== undefined) {
      const indexCacheBytes = Number(values["index-bytes"]);
      const first = await openOnce(s3, prefix, cache, { indexCacheBytes, epoch: true });
      const second = await openOnce(s3, prefix, cache, { indexCacheBytes });
      for (const [open, r] of Object.entries({ "first + epoch": first, "second (past bound)": second }))
        rows.push({ objects: n, open, ...r, seconds: Number(r.seconds.toFixed(3)) });
      continue;
    }
    const listing = await listOnce(s3, prefix, cache);
    const first = await openOnce(s3, prefix, cache);
    const second = await openOnce(s3, prefix, cache);
    // Before local tables a second open read every object's index back from the disk cache.
    for (const name of await readdir(cache)) if (/\.tb[lp]$/.test(name)) await rm(join(cache, name));
    const perObject = await openOnce(s3, prefix, cache);
    const changed = Math.max(1, Math.floor(n / 100));
    await s3.seed(Array.from({ length: changed }, (_, i) => ({ key: key(i * 100), body: npy(2) })));
    const afterChange = await openOnce(s3, prefix, cache);
    await s3.seed(Array.from({ length: Math.min(10, n) }, (_, i) => ({ key: key(i + 1), body: npy(3) })));
    const afterAdjacent = await openOnce(s3, prefix, cache);
    for (const [open, r] of Object.entries({ listing, first, second, perObject, afterChange, afterAdjacent }))
      rows.push({ objects: n, open, ...r, seconds: Number(r.seconds.toFixed(3)) });
  }
} finally {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
}

if (values.json) console.log(JSON.stringify(rows));
else {
  console.log(
    "objects  open                 open() s  clips  requests  index GETs  indexes read  pages read  pages written",
  );
  for (const r of rows)
    console.log(
      `${String(r.objects).padStart(7)}  ${String(r.open).padEnd(19)}  ${String(r.seconds).padStart(8)}  ${String(r.clips).padStart(5)}  ${String(r.requests).padStart(8)}  ${String(r.indexRequests).padStart(10)}  ${String(r.indexesRead).padStart(12)}  ${String(r.pagesRead).padStart(10)}  ${String(r.pagesWritten).padStart(13)}`,
    );
}
