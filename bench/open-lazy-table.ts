/**
 * Bytes and requests of the table that open() and the first batch read on the lazy path
 * (sdk/lazy-open.ts: LazyTable, LazyPlan, the deal), against dataset size. Per size, a
 * generation of synthetic entries (synthesizeGeneration: the publisher's page codec, pins
 * apart, directory pages, a signed head) is held in memory as the bucket holds it (gzip) and
 * served through a TableStore that counts what it hands out, as the edge's routes would send
 * it. Measured, side by side in one run:
 *  - open: the signed head and the directory pages at the prefix's edges (what open() reads);
 *  - first batch: rank 3 of 8's first `batch` clips readied (their window's pages read, and the
 *    next window's fetched ahead), and the etags (pins) of their objects checked as the source checks
 *    them before signing their URLs.
 * A table of one page (10^3 objects) is read whole by open() (the lazy path takes tables of
 * more than one window of pages): its row is what that whole read costs.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/open-lazy-table.js [--sizes 1000,100000,1000000] [--batch 8] [--json]
 */
import { generateKeyPairSync } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { parseArgs } from "node:util";
import { LazyTable } from "../common/lazy-table.js";
import { manifestSigner, publicKeys, signJson } from "../common/manifest-sign.js";
import type { TableStore } from "../common/table-client.js";
import { resolveOptions } from "../sdk/internal.js";
import { lazyOpen } from "../sdk/lazy-open.js";
import { pagedStream } from "../sdk/sampler/shuffle.js";
import { StreamedGopClips } from "../sdk/sampler/streamed-gop-clips.js";
import { pageDigest } from "../sdk/source/page-check.js";
import { PositionSet } from "../sdk/state/checkpoint.js";
import { synthesizeInMemory } from "./synthetic-table.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,100000,1000000" },
    batch: { type: "string", default: "8" },
    json: { type: "boolean", default: false },
  },
});
const batch = Number(values.batch);
const sampling = resolveOptions({ frames: 16 }, {});
const signer = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const keys = Promise.resolve(publicKeys([signer]));

interface Row {
  objects: number;
  pages: number;
  openBytes: number;
  openRequests: number;
  firstBatchBytes: number;
  firstBatchRequests: number;
  /** Pages the first batch read (checked, decoded, planned). */
  pagesRead: number;
  /** Pages of the next window fetched ahead, not read. */
  pagesAhead: number;
  /** Of open and the first batch together: bytes of directory pages, of pages, of pins. */
  directoryBytes: number;
  pageBytes: number;
  pinBytes: number;
}

async function measure(n: number): Promise<Row> {
  const { head, directories, stored, pins } = await synthesizeInMemory(n);
  const dirNames = new Set(directories.map((d) => d.name));
  const signed = await signJson(head, signer);
  const headBytes = JSON.stringify(signed).length;
  const wire = { bytes: 0, requests: 0 };
  const split = { directoryBytes: 0, pageBytes: 0, pinBytes: 0 };
  const served = (gz: Uint8Array, part: keyof typeof split) => {
    split[part] += gz.byteLength;
    wire.bytes += gz.byteLength;
    wire.requests++;
    const raw = gunzipSync(gz);
    return new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  };
  const store: TableStore = {
    head: async () => {
      wire.bytes += headBytes;
      wire.requests++;
      return signed;
    },
    page: async (name) => served(stored.get(name)!, dirNames.has(name) ? "directoryBytes" : "pageBytes"),
    pins: async (name) => served(pins.get(name)!, "pinBytes"),
  };
  const table = (await LazyTable.open(store, keys, "scale", undefined, pageDigest))!;
  const { paged, listing } = lazyOpen(table, sampling, () => {});
  const mine = new StreamedGopClips(
    () => pagedStream(paged, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 })!,
    new PositionSet(Infinity),
    paged,
    3,
    8,
  );
  const open = { ...wire };
  for (let i = 0; i < batch; i++) {
    await mine.ready(i);
    const object = listing.objects.at(mine.at(i)!.ref.object)!;
    await table.etagOf(object);
  }
  const pagesRead = new Set(table.read).size;
  // The next window, fetched ahead while the first is consumed (read here only to await its fetch): its bytes count.
  await paged.load([...new Set([...paged.asked, ...paged.prefetched])]);
  return {
    objects: n,
    pages: table.pageCount,
    openBytes: open.bytes,
    openRequests: open.requests,
    firstBatchBytes: wire.bytes - open.bytes,
    firstBatchRequests: wire.requests - open.requests,
    pagesRead,
    pagesAhead: paged.prefetched.length,
    ...split,
  };
}

const rows: Row[] = [];
for (const n of values.sizes.split(",").map(Number)) rows.push(await measure(n));
if (values.json) console.log(JSON.stringify({ batch, rows }));
else {
  console.log(`rank 3 of 8, first batch of ${batch} clips; bytes as gzip on the wire, the signed head as JSON`);
  console.log(
    "objects     pages  open KiB  open req  first batch KiB  first batch req  pages read  fetched ahead  total KiB  (directory/page/pins KiB)",
  );
  for (const r of rows)
    console.log(
      `${String(r.objects).padEnd(10)} ${String(r.pages).padStart(6)} ${(r.openBytes / 1024).toFixed(1).padStart(9)} ${String(r.openRequests).padStart(9)} ${(r.firstBatchBytes / 1024).toFixed(1).padStart(16)} ${String(r.firstBatchRequests).padStart(16)} ${String(r.pagesRead).padStart(11)} ${String(r.pagesAhead).padStart(14)} ${((r.openBytes + r.firstBatchBytes) / 1024).toFixed(1).padStart(10)}  (${[r.directoryBytes, r.pageBytes, r.pinBytes].map((b) => (b / 1024).toFixed(1)).join("/")})`,
    );
}
