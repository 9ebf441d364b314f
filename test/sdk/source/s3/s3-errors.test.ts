import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listedObjects } from "../../../../sdk/source/source.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openS3Source, S3ErrorCode, type S3Env, type S3SourceOptions } from "../../../../sdk/source/s3/index.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

let s3: S3TestServer;
let eu: S3TestServer;
let guarded: S3TestServer;
/** Index caches of this file's sources, never the user's own. */
let cacheDir: string;

beforeAll(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "ec-s3-errors-"));
  [s3, eu, guarded] = await Promise.all([
    startS3Server(),
    startS3Server({ region: "eu-west-1" }),
    // A key that may read objects but not list the bucket.
    startS3Server({ deny: ({ method, path }) => method === "GET" && /^\/[^/]+\/?$/.test(path) }),
  ]);
  await Promise.all([s3, eu, guarded].map((server) => server.put("data/a.bin", "hello")));
});

afterAll(async () => {
  await Promise.all([s3, eu, guarded].map((server) => server?.close()));
  await rm(cacheDir, { recursive: true, force: true });
});

async function listError(server: S3TestServer, options: S3SourceOptions, bucket = server.bucket, env: S3Env = {}) {
  const source = await openS3Source(
    new URL(`s3://${bucket}/data`),
    { endpoint: server.endpoint, region: server.region, credentials: server.credentials, ...options },
    env,
  );
  try {
    await source.list();
  } catch (err) {
    return err as Error & { code: string };
  } finally {
    await source.close();
  }
  throw new Error("expected list() to fail");
}

describe("errors a user meets in direct-to-bucket mode", () => {
  it("missing credentials: ERR_S3_CREDENTIALS_MISSING before any request", async () => {
    await expect(openS3Source(new URL(`s3://${s3.bucket}/data`), { endpoint: s3.endpoint }, {})).rejects.toMatchObject({
      code: S3ErrorCode.CREDENTIALS_MISSING,
      message: expect.stringMatching(/AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/),
    });
  });

  it("credentials from the environment work", async () => {
    const source = await openS3Source(
      new URL(`s3://${s3.bucket}/data`),
      { endpoint: s3.endpoint },
      {
        AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
        EC_INDEX_CACHE_DIR: join(cacheDir, "env"),
      },
    );
    try {
      expect(listedObjects((await source.list()).objects).map((o) => o.key)).toEqual(["data/a.bin"]);
    } finally {
      await source.close();
    }
  });

  it("an unknown access key: ERR_S3_CREDENTIALS_INVALID", async () => {
    const err = await listError(s3, { credentials: { accessKeyId: "NOPE", secretAccessKey: "x" } });
    expect(err.code).toBe(S3ErrorCode.CREDENTIALS_INVALID);
    expect(err.message).toMatch(/check the access key id and secret/);
  });

  it("a wrong secret: ERR_S3_CREDENTIALS_INVALID", async () => {
    const err = await listError(s3, {
      credentials: { accessKeyId: s3.credentials.accessKeyId, secretAccessKey: "wrong" },
    });
    expect(err.code).toBe(S3ErrorCode.CREDENTIALS_INVALID);
  });

  it("a wrong region: ERR_S3_WRONG_REGION naming the bucket's region", async () => {
    const err = await listError(eu, { region: "us-east-1" });
    expect(err.code).toBe(S3ErrorCode.WRONG_REGION);
    expect(err.message).toMatch(
      /signed for region "us-east-1" but the bucket is in "eu-west-1": pass region "eu-west-1"/,
    );
  });

  it("a bucket that does not exist: ERR_S3_BUCKET_NOT_FOUND", async () => {
    const err = await listError(s3, {}, "no-such-bucket");
    expect(err.code).toBe(S3ErrorCode.BUCKET_NOT_FOUND);
    expect(err.message).toMatch(/No bucket "no-such-bucket"/);
  });

  it("a key without list permission: ERR_S3_ACCESS_DENIED", async () => {
    const err = await listError(guarded, {});
    expect(err.code).toBe(S3ErrorCode.ACCESS_DENIED);
    expect(err.message).toMatch(/lacks list/);
  });

  it("a presigned read refused by the bucket maps the same way", async () => {
    const source = await openS3Source(
      new URL(`s3://${s3.bucket}/data`),
      { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials },
      {},
    );
    const object = (await source.objects())[0]!;
    await source.close();
    const wrong = await openS3Source(
      new URL(`s3://${s3.bucket}/data`),
      {
        endpoint: s3.endpoint,
        credentials: { accessKeyId: s3.credentials.accessKeyId, secretAccessKey: "wrong" },
        indexCacheDir: join(cacheDir, "wrong"),
      },
      {},
    );
    try {
      // Index reads go to the bucket and see its error code; byte reads through the cache see the 403 status.
      await expect(wrong.index(object)).rejects.toMatchObject({ code: S3ErrorCode.CREDENTIALS_INVALID });
      await expect(wrong.read(object, 0, 5)).rejects.toMatchObject({ code: S3ErrorCode.ACCESS_DENIED });
    } finally {
      await wrong.close();
    }
  });
});
