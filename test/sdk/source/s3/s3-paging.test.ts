import { listedObjects } from "../../../../sdk/source/source.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openS3Source, S3Bucket, parseBucketUrl } from "../../../../sdk/source/s3/index.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

const COUNT = 1003;
const keys = Array.from({ length: COUNT }, (_, i) => `many/${String(i).padStart(5, "0")}.bin`);
let s3: S3TestServer;

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.seed(keys.map((key) => ({ key, body: key })));
  await s3.put("many-not/x.bin", "outside the prefix");
}, 120_000);

afterAll(async () => {
  await s3?.close();
});

describe("listing past ListObjectsV2's 1000-key page", () => {
  it("follows continuation tokens and returns every key once, in order", async () => {
    const location = parseBucketUrl(
      new URL(`s3://${s3.bucket}/many`),
      { endpoint: s3.endpoint, region: s3.region },
      {},
    );
    const bucket = new S3Bucket(location, s3.credentials);
    try {
      const pages: number[] = [];
      for await (const page of bucket.pages()) pages.push(page.length);
      expect(pages).toEqual([1000, COUNT - 1000]);
    } finally {
      bucket.destroy();
    }
    const source = await openS3Source(
      new URL(`s3://${s3.bucket}/many`),
      { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials },
      {},
    );
    try {
      const listing = await source.list();
      const objects = listedObjects(listing.objects);
      const shards = listing.shards;
      expect(objects.map((o) => o.key)).toEqual(keys);
      expect(objects.every((o, i) => o.size === keys[i]!.length)).toBe(true);
      expect(shards.flatMap((s) => s.objects)).toEqual(keys.map((_, i) => i));
    } finally {
      await source.close();
    }
  });
});
