import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageEntries } from "../../../../common/dataset-table/page-pins.js";
import { tableKeys } from "../../../../common/dataset-table/table-keys.js";
import {
  SignedManifestV1,
  TableHeadV1,
  type TableEntryV1,
  type TablePageRefV1,
} from "../../../../common/schema/index.js";
import { cleanEnv, ec, ensureBuilt } from "../../../helpers/ec-process.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

// Old pages of a bucket's own table (`ec index s3://…`, no edge) go as the edge's go: after
// several generations, what no kept generation names is deleted, and the kept ones read whole.
const BUCKET = "ec-collect";

let dir: string;
let s3: S3TestServer;
const manifestKey = generateKeyPairSync("ed25519")
  .privateKey.export({ type: "pkcs8", format: "der" })
  .toString("base64");

const env = () =>
  cleanEnv({
    AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    AWS_REGION: s3.region,
    EC_MANIFEST_KEY: manifestKey,
    EC_INDEX_CACHE_DIR: join(dir, "ic"),
  });
const index = (...rest: string[]) =>
  ec(
    [
      "index",
      `s3://${BUCKET}/ds`,
      "--s3-endpoint",
      s3.endpoint,
      "--path-style",
      "--page-target",
      "4",
      "--json",
      ...rest,
    ],
    env(),
  );

async function get(key: string): Promise<Uint8Array> {
  const out = await s3.client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return out.Body!.transformToByteArray();
}

async function keys(prefix: string): Promise<string[]> {
  const out = await s3.client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

/** Generation `g` of the `ds` table read whole: the objects it stores (page, pins, directory page) and every entry. */
async function generation(g: number): Promise<{ stored: string[]; entries: TableEntryV1[] }> {
  const signed = SignedManifestV1.parse(JSON.parse(new TextDecoder().decode(await get(tableKeys.generation("ds", g)))));
  const head = TableHeadV1.parse(JSON.parse(signed.payload));
  const stored: string[] = [];
  let pages: TablePageRefV1[];
  if (head.version === 1) pages = head.pages;
  else {
    pages = [];
    for (const d of head.directories) {
      stored.push(tableKeys.page("ds", d.name));
      pages.push(
        ...(JSON.parse(gunzipSync(await get(tableKeys.page("ds", d.name))).toString()) as { pages: TablePageRefV1[] })
          .pages,
      );
    }
  }
  const entries: TableEntryV1[] = [];
  for (const ref of pages) {
    stored.push(tableKeys.page("ds", ref.name));
    const page = new Uint8Array(gunzipSync(await get(tableKeys.page("ds", ref.name))));
    let pins: Uint8Array | undefined;
    if (ref.pins) {
      stored.push(tableKeys.pins("ds", ref.name));
      pins = new Uint8Array(gunzipSync(await get(tableKeys.pins("ds", ref.name))));
    }
    entries.push(...pageEntries(page, pins));
  }
  return { stored, entries };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-table-collect-"));
  s3 = await startS3Server({ buckets: [BUCKET] });
  await s3.seed(
    Array.from({ length: 24 }, (_, i) => ({ key: `ds/o/${String(i).padStart(3, "0")}.bin`, body: `o${i}` })),
    BUCKET,
  );
  await ensureBuilt();
}, 300_000);

afterAll(async () => {
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("ec index s3://… deletes what no kept generation names", () => {
  it("keeps the newest generations whole and deletes the pages only older ones named", async () => {
    // Four generations, each after objects changed all over the listing: every chunk's pages are rewritten.
    const counts: number[] = [];
    for (let g = 1; g <= 4; g++) {
      if (g > 1)
        await s3.seed(
          Array.from({ length: 24 }, (_, i) => ({
            key: `ds/o/${String(i).padStart(3, "0")}.bin`,
            body: `o${i}-g${g}`,
          })),
          BUCKET,
        );
      const out = await index("--keep-generations", "2", "--keep-seconds", "0");
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout)).toMatchObject({ publish: { generation: g, published: true } });
      counts.push((await generation(g)).entries.length);
    }
    expect(counts).toEqual([24, 24, 24, 24]);

    // Generations 3 and 4 are kept, whole; 1 and 2 and every table object only they named are gone.
    expect(await keys(tableKeys.generation("ds", 0).replace(/0\.json$/, ""))).toEqual(
      [3, 4].map((g) => tableKeys.generation("ds", g)).sort(),
    );
    const [third, fourth] = [await generation(3), await generation(4)];
    expect(fourth.entries.map((e) => e.etag)).not.toEqual(third.entries.map((e) => e.etag));
    expect(await keys(tableKeys.page("ds", "").replace(/\.json$/, ""))).toEqual(
      [...new Set([...third.stored, ...fourth.stored])].sort(),
    );

    // `--gc` alone, keeping one: generation 4 alone stays, whole, and a reader still opens it.
    const gc = await index("--gc", "--keep-generations", "1", "--keep-seconds", "0");
    expect(gc.code, gc.stderr).toBe(0);
    expect(JSON.parse(gc.stdout)).toMatchObject({ collected: { dropped: [3], kept: [4] } });
    expect(await keys(tableKeys.page("ds", "").replace(/\.json$/, ""))).toEqual([...fourth.stored].sort());
    expect((await generation(4)).entries).toEqual(fourth.entries);

    // Within the age kept, nothing goes whatever the count says: a running shard's pages are safe.
    await s3.seed([{ key: "ds/o/000.bin", body: "o0-g5" }], BUCKET);
    const young = await index("--keep-generations", "1");
    expect(young.code, young.stderr).toBe(0);
    expect(JSON.parse(young.stdout)).toMatchObject({
      publish: { generation: 5, collected: { dropped: [], pages: 0 } },
    });
    expect((await generation(4)).entries).toEqual(fourth.entries);
  }, 300_000);
});
