// Puts the videos of a folder into the local S3 server under PREFIX, each COPIES times, and a
// table generation of one object a page beside them (what `ec index` would write, through the
// same codec and signing as the edge): a table of more pages than one window of the order, so
// open() reads it lazily. Usage: node lazy_table.mjs ROOT S3_JSON VIDEOS PREFIX COPIES
import { createHash, generateKeyPairSync } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [root, s3Json, videos, prefix, copies] = process.argv.slice(2);
const s3 = JSON.parse(s3Json);
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);
const { tableEntry } = await dist("common/dataset-table/entry.js");
const { buildGeneration } = await dist("common/dataset-table/generation.js");
const { tableKeys } = await dist("common/dataset-table/table-keys.js");
const { manifestSigner, publicKeys, signJson } = await dist("common/manifest-sign.js");
const { buildIndex, bytesReader } = await dist("common/media-index/index.js");
const { S3Client, PutObjectCommand } = createRequire(join(root, "package.json"))("@aws-sdk/client-s3");

const client = new S3Client({
  endpoint: s3.endpoint,
  region: s3.region,
  forcePathStyle: true,
  credentials: { accessKeyId: s3.access_key_id, secretAccessKey: s3.secret_access_key },
});
const put = (Key, Body, ContentEncoding) =>
  client.send(new PutObjectCommand({ Bucket: s3.bucket, Key, Body, ...(ContentEncoding ? { ContentEncoding } : {}) }));

const entries = [];
for (const name of readdirSync(videos).filter((n) => n.endsWith(".mp4")).sort()) {
  const body = new Uint8Array(readFileSync(join(videos, name)));
  for (let c = 0; c < Number(copies); c++) {
    const key = `${prefix}/${c}-${name}`;
    await put(key, body);
    const etag = `"${createHash("md5").update(body).digest("hex")}"`;
    entries.push(tableEntry(await buildIndex(bytesReader(body), { key, etag })));
  }
}
const signer = await manifestSigner(
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
);
const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
  root: prefix,
  shardBytes: 1 << 20,
  now: Math.floor(Date.now() / 1000),
  pinsApart: true,
  pageTarget: 1,
  directoryTarget: 2,
});
for (const p of pages) {
  await put(tableKeys.page(prefix, p.name), p.gz, "gzip");
  if (p.pins) await put(tableKeys.pins(prefix, p.name), p.pins, "gzip");
}
const signed = JSON.stringify(await signJson(head, signer));
await put(tableKeys.generation(prefix, head.generation), signed);
await put(tableKeys.head(prefix), signed);
await put(tableKeys.publicKeys(), JSON.stringify(publicKeys([signer])));
process.stdout.write(`${JSON.stringify({ objects: entries.length, pages: pages.length - head.directories.length })}\n`);
