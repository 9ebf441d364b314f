import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { tableEntry } from "../../../../common/dataset-table/entry.js";
import { buildGeneration } from "../../../../common/dataset-table/generation.js";
import { tableKeys } from "../../../../common/dataset-table/table-keys.js";
import { manifestSigner, publicKeys, signJson } from "../../../../common/manifest-sign.js";
import { buildIndex, bytesReader } from "../../../../common/media-index/index.js";
import { open, type OpenOptions } from "../../../../sdk/index.js";
import { openS3Source } from "../../../../sdk/source/s3/index.js";
import { makeVideo } from "../../../helpers/make-video.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

let dir: string;
let s3: S3TestServer;
const files = new Map<string, Uint8Array>();
const etags = new Map<string, string>();

const options = (): OpenOptions => ({
  endpoint: s3.endpoint,
  region: s3.region,
  credentials: s3.credentials,
  device: "cpu",
  frames: 4,
  seed: 2,
});

async function run(extra: OpenOptions = {}) {
  const url = `s3://${s3.bucket}/tbl`;
  const source = await openS3Source(new URL(url), { ...options(), indexCacheDir: join(dir, `ic-${Math.random()}`) });
  const notices: string[] = [];
  const listen = (w: Error & { code?: string }) => notices.push(w.code ?? w.name);
  process.on("warning", listen);
  try {
    const ds = await open(url, { ...options(), ...extra }, { source });
    const builtAtOpen = source.counters().indexMisses;
    const ids: string[] = [];
    for await (const b of ds) ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    await ds.close();
    await new Promise((r) => setImmediate(r));
    return { ids, generation: ds.generation, builtAtOpen, fingerprint: ds.state().fingerprint, notices };
  } finally {
    process.off("warning", listen);
  }
}

/** What the edge's indexer would have written into the bucket: one signed generation, its pages and the public keys. */
async function writeTable(): Promise<void> {
  const entries = await Promise.all(
    [...files].map(async ([key, bytes]) =>
      tableEntry(await buildIndex(bytesReader(bytes), { key, etag: etags.get(key)! })),
    ),
  );
  const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: "tbl",
    shardBytes: 128 << 20,
    now: Math.floor(Date.now() / 1000),
  });
  const key = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64");
  const signer = await manifestSigner(key);
  const body = JSON.stringify(await signJson(head, signer));
  const put = (Key: string, Body: Uint8Array | string, ContentEncoding?: string) =>
    s3.client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key, Body, ...(ContentEncoding ? { ContentEncoding } : {}) }),
    );
  for (const p of pages) await put(tableKeys.page("tbl", p.name), p.gz, "gzip");
  await put(tableKeys.generation("tbl", head.generation), body);
  await put(tableKeys.head("tbl"), body);
  await put(tableKeys.publicKeys(), JSON.stringify(publicKeys([signer])));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-s3-table-"));
  vi.stubEnv("EC_INDEX_CACHE_DIR", join(dir, "index-cache"));
  s3 = await startS3Server();
  files.set(
    "tbl/a.mp4",
    new Uint8Array(
      await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 36, gop: 6, bframes: 2 })),
    ),
  );
  files.set(
    "tbl/sub/b.mp4",
    new Uint8Array(
      await readFile(
        await makeVideo(dir, {
          codec: "hevc",
          width: 64,
          height: 48,
          frames: 24,
          gop: 8,
          faststart: true,
          name: "b.mp4",
        }),
      ),
    ),
  );
  files.set("tbl/broken.mp4", files.get("tbl/a.mp4")!.slice(0, 3000));
  for (const [key, bytes] of files) etags.set(key, await s3.put(key, bytes));
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("r2:// and s3:// read the edge's dataset table when the bucket has one", () => {
  it("plans the same clips from the table as from indexes built on the client, and builds none at open", async () => {
    const before = await run();
    expect(before.generation).toBeUndefined();
    expect(before.builtAtOpen).toBe(3);
    expect(before.notices).toEqual(["ERR_TABLE_MISSING"]);
    await writeTable();
    const after = await run();
    expect(after.generation).toBe(1);
    expect(after.builtAtOpen).toBe(0);
    // Planned from the bucket's table: nothing to say.
    expect(after.notices).toEqual([]);
    expect(after.ids).toEqual(before.ids);
    expect(after.fingerprint).toBe(before.fingerprint);
    // Ranks split the same epoch order (GOP runs kept on one rank): disjoint, covering, each in order.
    const ranks = [(await run({ rank: 0, world: 2 })).ids, (await run({ rank: 1, world: 2 })).ids];
    expect([...ranks[0]!, ...ranks[1]!].sort()).toEqual([...before.ids].sort());
    for (const ids of ranks) expect(ids).toEqual(before.ids.filter((id) => ids.includes(id)));
  });
});
