import { describe, expect, it } from "vitest";
import {
  assertNotPublicBucketUrl,
  parseBucketUrl,
  resolveCredentials,
  S3ErrorCode,
} from "../../../../sdk/source/s3/index.js";

const ACCOUNT = "0123456789abcdef0123456789abcdef";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

describe("parseBucketUrl", () => {
  it("maps r2://ACCOUNT/BUCKET/PREFIX to the account's R2 endpoint and region auto", () => {
    expect(parseBucketUrl(new URL(`r2://${ACCOUNT}/videos/gameplay/2024`), {}, {})).toEqual({
      scheme: "r2",
      bucket: "videos",
      prefix: "gameplay/2024/",
      endpoint: `https://${ACCOUNT}.r2.cloudflarestorage.com`,
      region: "auto",
      forcePathStyle: true,
    });
  });

  it("takes the account from R2_ACCOUNT_ID for r2://BUCKET/PREFIX", () => {
    const loc = parseBucketUrl(new URL("r2://videos/gameplay"), {}, { R2_ACCOUNT_ID: ACCOUNT });
    expect(loc.bucket).toBe("videos");
    expect(loc.prefix).toBe("gameplay/");
    expect(loc.endpoint).toBe(`https://${ACCOUNT}.r2.cloudflarestorage.com`);
  });

  it("rejects r2:// without an account id", () => {
    expect(codeOf(() => parseBucketUrl(new URL("r2://videos/gameplay"), {}, {}))).toBe(S3ErrorCode.URL_INVALID);
    expect(codeOf(() => parseBucketUrl(new URL(`r2://${ACCOUNT}`), {}, {}))).toBe(S3ErrorCode.URL_INVALID);
  });

  it("uses options, then AWS_ENDPOINT_URL_S3 / AWS_REGION, for s3://", () => {
    const env = { AWS_ENDPOINT_URL_S3: "http://127.0.0.1:9000", AWS_REGION: "eu-west-1" };
    expect(parseBucketUrl(new URL("s3://bkt/a/b/"), {}, env)).toMatchObject({
      scheme: "s3",
      bucket: "bkt",
      prefix: "a/b/",
      endpoint: "http://127.0.0.1:9000",
      region: "eu-west-1",
      forcePathStyle: true,
    });
    expect(
      parseBucketUrl(
        new URL("s3://bkt"),
        { endpoint: "http://localhost:1", region: "us-west-2", forcePathStyle: false },
        env,
      ),
    ).toMatchObject({
      prefix: "",
      endpoint: "http://localhost:1",
      region: "us-west-2",
      forcePathStyle: false,
    });
    expect(parseBucketUrl(new URL("s3://bkt/x"), {}, {})).toMatchObject({
      endpoint: undefined,
      region: "us-east-1",
      forcePathStyle: false,
    });
  });

  it("says what was expected for a bad option", () => {
    expect(() => parseBucketUrl(new URL("s3://bkt/x"), { endpoint: "ftp://x" } as never, {})).toThrow(
      /Expected an http\(s\) URL for endpoint but received "ftp:\/\/x"/,
    );
    expect(() => parseBucketUrl(new URL("s3://bkt/x"), { credentials: { accessKeyId: "a" } } as never, {})).toThrow(
      /credentials.secretAccessKey/,
    );
  });

  it("refuses a public r2.dev URL with a message that says what to use instead", () => {
    expect(() => assertNotPublicBucketUrl(new URL("https://pub-0123abcd.r2.dev/clips"))).toThrow(
      /r2:\/\/ACCOUNT_ID\/BUCKET\/PREFIX/,
    );
    expect(codeOf(() => assertNotPublicBucketUrl(new URL("https://pub-0123abcd.r2.dev/clips")))).toBe(
      S3ErrorCode.PUBLIC_URL,
    );
    expect(codeOf(() => parseBucketUrl(new URL("s3://bkt/x"), { endpoint: "https://pub-0123abcd.r2.dev" }, {}))).toBe(
      S3ErrorCode.PUBLIC_URL,
    );
    expect(codeOf(() => parseBucketUrl(new URL("r2://pub-0123abcd.r2.dev/clips"), {}, {}))).toBe(
      S3ErrorCode.PUBLIC_URL,
    );
    expect(() => assertNotPublicBucketUrl(new URL("https://edge.example/v1/datasets/clips"))).not.toThrow();
  });
});

describe("resolveCredentials", () => {
  const r2 = { scheme: "r2" as const, bucket: "videos" };
  const s3 = { scheme: "s3" as const, bucket: "videos" };

  it("prefers the option over the environment", () => {
    const given = { accessKeyId: "opt", secretAccessKey: "opt-secret" };
    expect(resolveCredentials(s3, given, { AWS_ACCESS_KEY_ID: "env", AWS_SECRET_ACCESS_KEY: "env" })).toBe(given);
  });

  it("reads R2_* first for r2:// and AWS_* (with session token) first for s3://", () => {
    const env = {
      R2_ACCESS_KEY_ID: "r2",
      R2_SECRET_ACCESS_KEY: "r2s",
      AWS_ACCESS_KEY_ID: "aws",
      AWS_SECRET_ACCESS_KEY: "awss",
      AWS_SESSION_TOKEN: "tok",
    };
    expect(resolveCredentials(r2, undefined, env)).toEqual({ accessKeyId: "r2", secretAccessKey: "r2s" });
    expect(resolveCredentials(s3, undefined, env)).toEqual({
      accessKeyId: "aws",
      secretAccessKey: "awss",
      sessionToken: "tok",
    });
    expect(
      resolveCredentials(r2, undefined, { AWS_ACCESS_KEY_ID: "aws", AWS_SECRET_ACCESS_KEY: "awss" }).accessKeyId,
    ).toBe("aws");
  });

  it("names the variables to set when none are", () => {
    expect(codeOf(() => resolveCredentials(r2, undefined, {}))).toBe(S3ErrorCode.CREDENTIALS_MISSING);
    expect(() => resolveCredentials(r2, undefined, {})).toThrow(/R2_ACCESS_KEY_ID and R2_SECRET_ACCESS_KEY/);
    expect(() => resolveCredentials(s3, undefined, { AWS_ACCESS_KEY_ID: "only-id" })).toThrow(
      /only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set/,
    );
  });
});

describe("open() with a public r2.dev URL", () => {
  it("fails with ERR_S3_PUBLIC_URL before any request", async () => {
    const { open } = await import("../../../../sdk/index.js");
    await expect(open("https://pub-0123456789abcdef.r2.dev/gameplay", { device: "cpu" })).rejects.toMatchObject({
      code: S3ErrorCode.PUBLIC_URL,
    });
  });
});
