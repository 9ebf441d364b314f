/**
 * A dataset table of 10^7 objects, synthesized with the publisher's own code
 * (synthesizeGeneration: page codec, pins apart, page-local shard counts, directory pages,
 * format-2 head) instead of uploading and indexing 10^7 objects; optionally stored straight
 * into a persisted local R2 (`--persist DIR`, what `wrangler dev --persist-to DIR` then serves)
 * for the open benches (signed with that edge's key: DIR/.dev.vars, made if missing; start it
 * with `startLocalEdge({ varsDir: DIR, persistDir: DIR/r2 })` as bench/open-scale.ts does). Measures: CPU of building the table (without the seeding), the signed
 * head's bytes, the directory pages' bytes, what a lazy open reads before any page (head and
 * the first directory page, openTable + pagesAt), and the puts of a generation that changes k
 * pages of it (buildGeneration with the directory pages those fall into).
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/table-scale.js [--objects 10000000] [--changed 1,10,100] [--persist DIR] [--json]
 */
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { gunzip } from "../common/dataset-table/digest.js";
import { decodeDirectory } from "../common/dataset-table/directory.js";
import { buildGeneration, PAGE_TARGET, type StoredPage } from "../common/dataset-table/generation.js";
import { tableKeys } from "../common/dataset-table/table-keys.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import type { TableEntryV1, TablePageRefV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { openTable, type TableStore } from "../common/table-client.js";
import { ensureDevVars } from "../sdk/dev/index.js";
import { seedLocalR2, type SeedObject } from "../test/helpers/seed-r2.js";
import { syntheticEntry, synthesizeGeneration } from "./synthetic-table.js";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "10000000" },
    changed: { type: "string", default: "1,10,100" },
    persist: { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const ROOT = "scale";
const objects = Number(values.objects);
const digits = String(objects).length;
/** Pages stored into the local R2 per seeding run (each starts a Miniflare). */
const SEED_CHUNK = 2000;

// A persisted table is signed with the key of the edge that will serve it (DIR/.dev.vars, made if missing).
const signer = await manifestSigner(
  values.persist
    ? ensureDevVars(values.persist).EC_MANIFEST_KEY
    : generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const gzHttp = { contentType: "application/octet-stream", contentEncoding: "gzip" };
const asSeed = (p: StoredPage): SeedObject[] => [
  { key: tableKeys.page(ROOT, p.name), body: p.gz, httpMetadata: gzHttp },
  ...(p.pins ? [{ key: tableKeys.pins(ROOT, p.name), body: p.pins, httpMetadata: gzHttp }] : []),
];

let seedMs = 0;
let seedCpu = 0;
const seed = async (items: SeedObject[]) => {
  if (!values.persist || items.length === 0) return;
  const [t0, c0] = [performance.now(), cpu()];
  await seedLocalR2(join(values.persist, "r2"), items);
  seedMs += performance.now() - t0;
  seedCpu += cpu() - c0;
};

let pageBytes = 0;
let pinBytes = 0;
const first = new Map<string, Uint8Array>();
let chunk: SeedObject[] = [];
const c0 = cpu();
const t0 = performance.now();
const { head, directories } = await synthesizeGeneration(
  { root: ROOT, objects, shardBytes: DEFAULT_SHARD_TARGET_BYTES, now: Math.floor(Date.now() / 1000) },
  async (page) => {
    pageBytes += page.gz.length;
    pinBytes += page.pins?.length ?? 0;
    if (first.size < 64) first.set(page.name, await gunzip(page.gz));
    chunk.push(...asSeed(page));
    if (chunk.length >= 2 * SEED_CHUNK) {
      await seed(chunk);
      chunk = [];
    }
  },
);
const body = JSON.stringify(await signJson(head, signer));
const buildCpu = cpu() - c0 - seedCpu;
const buildWall = performance.now() - t0 - seedMs;
await seed([
  ...chunk,
  ...directories.flatMap(asSeed),
  { key: tableKeys.generation(ROOT, 1), body },
  { key: tableKeys.head(ROOT), body },
  { key: tableKeys.publicKeys(), body: JSON.stringify(publicKeys([signer])) },
]);

// What a lazy open reads before any page: the head, and the directory page of pages 0..63.
const dirBytes = new Map(await Promise.all(directories.map(async (d) => [d.name, await gunzip(d.gz)] as const)));
let read = 0;
const store: TableStore = {
  head: async () => JSON.parse(body),
  page: async (name) => {
    const bytes = dirBytes.get(name) ?? first.get(name)!;
    read += bytes.length;
    return bytes;
  },
};
const o0 = cpu();
const list = (await openTable(store, Promise.resolve(publicKeys([signer]))))!;
const refs = await list.pagesAt(0, Math.min(64, list.pageCount));
const openCpu = cpu() - o0;
const openBytes = body.length + read;

// A generation that changes k pages, spread over the table: what it reads and writes.
const pageOfIndex = (p: number): TableEntryV1[] =>
  Array.from({ length: Math.min(PAGE_TARGET, objects - p * PAGE_TARGET) }, (_, k) => {
    const i = p * PAGE_TARGET + k;
    return syntheticEntry(`${ROOT}/o-${String(i).padStart(digits, "0")}.mp4`, i);
  });
const publishes = [];
for (const k of values.changed.split(",").map(Number)) {
  const pages = list.pageCount;
  const targets = Array.from({ length: k }, (_, j) => Math.floor(((j + 0.5) * pages) / k));
  const changes = new Map<string, TableEntryV1>();
  for (const p of targets) {
    const e = pageOfIndex(p)[1]!;
    changes.set(e.key, { ...e, etag: `"${"f".repeat(32)}"` });
  }
  let dirsRead = 0;
  const p0 = cpu();
  const next = await buildGeneration(
    head,
    changes,
    async (ref: TablePageRefV1) => pageOfIndex(Number(ref.name.split("-")[1])),
    {
      root: ROOT,
      shardBytes: head.shardBytes,
      now: 2,
      pinsApart: true,
      directory: async (ref) => (dirsRead++, decodeDirectory(dirBytes.get(ref.name)!)),
    },
  );
  const signed = JSON.stringify(await signJson(next.head, signer));
  const cpuMs = cpu() - p0;
  const newDirs = new Set(next.head.directories.filter((d) => d.name.startsWith("2-")).map((d) => d.name));
  publishes.push({
    changed_pages: k,
    directories_read: dirsRead,
    pages_written: next.pages.filter((p) => !newDirs.has(p.name)).length,
    directories_written: newDirs.size,
    puts: next.pages.reduce((n, p) => n + (p.pins ? 2 : 1), 0) + 3,
    head_bytes: signed.length,
    cpu_ms: Number(cpuMs.toFixed(1)),
  });
}

const dirSizes = directories.map((d) => d.gz.length);
const result = {
  objects,
  pages: list.pageCount,
  directories: directories.length,
  build_cpu_s: Number((buildCpu / 1000).toFixed(1)),
  build_cpu_us_per_object: Number(((buildCpu * 1000) / objects).toFixed(2)),
  build_wall_s: Number((buildWall / 1000).toFixed(1)),
  seed_wall_s: values.persist ? Number((seedMs / 1000).toFixed(1)) : undefined,
  head_bytes: body.length,
  head_gzip_bytes: gzipSync(body).length,
  directory_gzip_bytes_max: Math.max(...dirSizes),
  directory_bytes_max: Math.max(...[...dirBytes.values()].map((b) => b.length)),
  page_gzip_bytes_mean: Math.round(pageBytes / list.pageCount),
  pins_gzip_bytes_mean: Math.round(pinBytes / list.pageCount),
  shards: head.directories.reduce((n, d) => n + (d.shards ?? 0), 0),
  lazy_open_bytes: openBytes,
  lazy_open_requests: 1 + list.requests,
  lazy_open_cpu_ms: Number(openCpu.toFixed(1)),
  lazy_open_pages: refs.length,
  publishes,
};
if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
else process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
