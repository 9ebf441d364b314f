/**
 * A cold s3:// stream through a real origin-cache on loopback whose upstream is the bucket, read
 * over the local data plane: each plan window's spans are located in one batch, and the reads find
 * them there (the plan names the objects as the reads do), with no locate of their own.
 */
import { join } from "node:path";
import { afterAll, beforeAll, it, vi } from "vitest";
import { bucketUpstream, parseBucketUrl, S3Bucket } from "../../../../sdk/source/s3/index.js";
import { COLD_VIDEO, expectLocatesPerWindow } from "../../../helpers/cold-locates.js";
import { type S3Videos, startS3Videos } from "../../../helpers/s3-videos.js";

let fixture: S3Videos;

beforeAll(async () => {
  fixture = await startS3Videos(
    "ec-s3-cold-locates-",
    Object.fromEntries(["a", "b", "c"].map((k) => [`cold/${k}.mp4`, COLD_VIDEO])),
  );
  vi.stubEnv("EC_INDEX_CACHE_DIR", join(fixture.dir, "index-cache"));
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await fixture?.close();
});

it("locates a cold s3:// stream with one batch per plan window, no read locating on its own", async () => {
  const { s3 } = fixture;
  const dataset = `s3://${s3.bucket}/cold`;
  const options = { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials };
  const bucket = new S3Bucket(parseBucketUrl(new URL(dataset), options, {}), s3.credentials);
  const upstream = await bucketUpstream(bucket);
  bucket.destroy();
  await expectLocatesPerWindow(upstream, dataset, options, fixture.md5s);
});
