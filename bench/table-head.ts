/**
 * What a dataset table's head costs a client next to its pages: the signed head of format 1 (it
 * lists every page: name, key range, counts, SHA-256, set digest) of 10^3 to 10^7 objects at
 * 1000 objects a page, its bytes as stored, gzip-compressed (random digests, as real ones are),
 * and the time to verify its Ed25519 signature and parse it as TableHeadV1, as readTable does
 * once per open; beside it the head of format 2 (it names directory pages of 256 pages, with
 * their totals) of the same table, what is written now.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/table-head.js [--objects 1000,50000,1000000,10000000] [--rounds 5]
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { manifestSigner, publicKeys, signJson, verifiedPayload } from "../common/manifest-sign.js";
import { cutRuns, directoryParts, directorySummary } from "../common/dataset-table/directory.js";
import { TableHeadV1, type TableDirectoryRefV1, type TablePageRefV1 } from "../common/schema/index.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "1000,50000,1000000,10000000" },
    rounds: { type: "string", default: "5" },
  },
});
const PAGE = 1000;
const signer = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const keys = publicKeys([signer]);
const key = (i: number) => `gameplay/clips/${String(i).padStart(9, "0")}.mp4`;

console.log(
  "objects    pages  head B      B/object  gzip B    gzip B/object  verify+parse ms (median, min)  | format 2: directories  head B  gzip B  verify+parse ms (median)",
);
for (const objects of values.objects.split(",").map(Number)) {
  const count = Math.ceil(objects / PAGE);
  const pages: TablePageRefV1[] = Array.from({ length: count }, (_, p) => ({
    name: `${1 + (p % 997)}-${p}`,
    first: key(p * PAGE),
    last: key(p * PAGE + PAGE - 1),
    count: PAGE,
    bytes: PAGE * 2_000_000,
    sha256: randomBytes(32).toString("base64url"),
    digest: randomBytes(16).toString("hex"),
    frames: 300_000 + p,
    keyframes: 10_000,
    errors: 0,
    shards: 1,
  }));
  const directories: TableDirectoryRefV1[] = cutRuns(pages, directoryParts(pages.length, true)).map((run, d) => ({
    name: `1234-${count + d}`,
    sha256: randomBytes(32).toString("base64url"),
    ...directorySummary(run),
  }));
  const v2: TableHeadV1 = {
    version: 2,
    root: "gameplay",
    generation: 1234,
    createdAt: 1,
    shardBytes: 128 << 20,
    objects: count * PAGE,
    directories,
  };
  const body2 = JSON.stringify(await signJson(v2, signer));
  const ms2: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    const t0 = performance.now();
    TableHeadV1.parse(JSON.parse(await verifiedPayload(JSON.parse(body2), keys)));
    ms2.push(performance.now() - t0);
  }
  const head: TableHeadV1 = {
    version: 1,
    root: "gameplay",
    generation: 1234,
    createdAt: 1,
    shardBytes: 128 << 20,
    objects: count * PAGE,
    pages,
  };
  const body = JSON.stringify(await signJson(head, signer));
  const gz = gzipSync(body).length;
  const ms: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    const t0 = performance.now();
    TableHeadV1.parse(JSON.parse(await verifiedPayload(JSON.parse(body), keys)));
    ms.push(performance.now() - t0);
  }
  const per = (b: number) => (b / (count * PAGE)).toFixed(3);
  console.log(
    `${String(count * PAGE).padStart(8)}  ${String(count).padStart(6)}  ${String(body.length).padStart(10)}  ${per(body.length).padStart(8)}  ${String(gz).padStart(8)}  ${per(gz).padStart(13)}  ${median(ms).toFixed(1)}, ${Math.min(...ms).toFixed(1)}  | ${String(directories.length).padStart(4)}  ${String(body2.length).padStart(8)}  ${String(gzipSync(body2).length).padStart(6)}  ${median(ms2).toFixed(1)}`,
  );
}
