/**
 * Dataset tables for tests, written by the publisher's own code (buildGeneration) and signed
 * as the edge signs them: in a memory store that logs what a reader asks of it, or in the
 * bucket of a local S3 server as the edge's indexer would have left them.
 */
import { generateKeyPairSync } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { buildGeneration, type GenerationOptions, type StoredPage } from "../../common/dataset-table/generation.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import { type ManifestSigner, manifestSigner, publicKeys, signJson } from "../../common/manifest-sign.js";
import type { TableEntryV1, TableHeadV1 } from "../../common/schema/index.js";
import type { TableStore } from "../../common/table-client.js";
import type { S3TestServer } from "./s3-server.js";

/** A signer with a fresh Ed25519 key, as an edge's signing key. */
export async function testSigner(): Promise<ManifestSigner> {
  return manifestSigner(
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  );
}

/**
 * Video entries of root `root` under one dataset per `counts` key, keys zero-padded to three
 * digits, sizes and etags told apart by their place.
 *
 * @example
 * const entries = datasetEntries({ a: 30, b: 20, c: 10 }); // d/a/000 … d/c/009
 */
export function datasetEntries(counts: Record<string, number>, root = "d"): TableEntryV1[] {
  return Object.entries(counts)
    .flatMap(([name, n]) => Array.from({ length: n }, (_, i) => `${root}/${name}/${String(i).padStart(3, "0")}`))
    .map((key, i) => ({ key, size: 1000 + 7919 * i, etag: `"e${i}"`, kind: "video", frames: 10, keyframes: [0, 5] }));
}

/**
 * A signed first generation of `entries` in a memory store: `asked` logs the page names it
 * is asked for (and `pins:NAME`, and `head` where `logHead`); `resign` replaces the head.
 *
 * @example
 * const { store, keys } = await seedTableStore(entries, { root: "d", shardBytes: 20_000, now: 0, pageTarget: 2 });
 */
export async function seedTableStore(entries: readonly TableEntryV1[], o: GenerationOptions & { logHead?: boolean }) {
  const { logHead = false, ...options } = o;
  const signer = await testSigner();
  const { head, pages } = await buildGeneration(
    undefined,
    new Map(entries.map((e) => [e.key, e])),
    async () => [],
    options,
  );
  const bodies = new Map(pages.map((p) => [p.name, new Uint8Array(gunzipSync(p.gz))]));
  const pins = new Map(pages.flatMap((p) => (p.pins ? [[p.name, new Uint8Array(gunzipSync(p.pins))] as const] : [])));
  const asked: string[] = [];
  let signed = await signJson(head satisfies TableHeadV1, signer);
  const store: TableStore = {
    head: async () => (logHead && asked.push("head"), signed),
    page: async (name) => (asked.push(name), bodies.get(name)!),
    ...(pins.size > 0 ? { pins: async (name: string) => (asked.push(`pins:${name}`), pins.get(name)!) } : {}),
  };
  const resign = async (h: unknown) => {
    signed = await signJson(h as TableHeadV1, signer);
  };
  return { head, bodies, pins, store, keys: Promise.resolve(publicKeys([signer])), asked, resign };
}

/**
 * Writes a generation into `s3`'s bucket under `root`'s table as the edge's indexer would:
 * its pages (gzip) and pins, the generation's head unless `generationHead` is false, the
 * latest head and the public keys of `signer`.
 *
 * @example
 * await putTable(s3, "lt", await buildGeneration(undefined, changes, async () => [], options), signer);
 */
export async function putTable(
  s3: S3TestServer,
  root: string,
  generation: { head: TableHeadV1; pages: readonly StoredPage[] },
  signer: ManifestSigner,
  o: { generationHead?: boolean } = {},
): Promise<void> {
  const put = (Key: string, Body: Uint8Array | string, ContentEncoding?: string) =>
    s3.client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key, Body, ...(ContentEncoding ? { ContentEncoding } : {}) }),
    );
  for (const p of generation.pages) {
    await put(tableKeys.page(root, p.name), p.gz, "gzip");
    if (p.pins) await put(tableKeys.pins(root, p.name), p.pins, "gzip");
  }
  const body = JSON.stringify(await signJson(generation.head, signer));
  if (o.generationHead !== false) await put(tableKeys.generation(root, generation.head.generation), body);
  await put(tableKeys.head(root), body);
  await put(tableKeys.publicKeys(), JSON.stringify(publicKeys([signer])));
}
