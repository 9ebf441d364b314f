import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main as push } from "../../../sdk/cli/push.js";
import { pushToBucket } from "../../../sdk/push/index.js";
import { S3ErrorCode } from "../../../sdk/source/s3/index.js";
import { startS3Server, type S3TestServer } from "../../helpers/s3-server.js";
import { captureOutput } from "../../helpers/capture-output.js";

let s3: S3TestServer;
let dir: string;
const MiB = 1 << 20;
const files = new Map<string, Buffer>([
  ["a.mp4", randomBytes(1000)],
  ["sub/big.bin", randomBytes(11 * MiB + 123)],
]);

beforeAll(async () => {
  s3 = await startS3Server();
  dir = await mkdtemp(join(tmpdir(), "ec-push-s3-"));
  await mkdir(join(dir, "src", "sub"), { recursive: true });
  for (const [rel, body] of files) await writeFile(join(dir, "src", rel), body);
});

afterAll(async () => {
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

async function stored(key: string): Promise<Buffer> {
  const out = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

describe("pushing a directory straight to a bucket", () => {
  it("uploads small files in one PUT and large ones multipart, byte-exact, with progress adding up", async () => {
    let planned = 0;
    let sent = 0;
    const summary = await pushToBucket({
      dir: join(dir, "src"),
      url: new URL(`s3://${s3.bucket}/pushed/run1`),
      s3: { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials },
      partSize: 5 * MiB,
      onPlan: (_files, bytes) => (planned = bytes),
      onProgress: (e) => ("bytes" in e ? (sent += e.bytes) : undefined),
    });
    expect(summary).toMatchObject({ target: `s3://${s3.bucket}/pushed/run1/`, files: 2, multipart: 1, failed: 0 });
    expect(sent).toBe(planned);
    expect(planned).toBe([...files.values()].reduce((n, b) => n + b.length, 0));
    for (const [rel, body] of files) expect(md5(await stored(`pushed/run1/${rel}`))).toBe(md5(body));
    expect(summary.pushed.find((p) => p.key.endsWith("a.mp4"))!.etag).toBe(`"${md5(files.get("a.mp4")!)}"`);
  });

  it("ec push DIR s3://… --s3-endpoint takes credentials from the environment and prints one JSON line", async () => {
    vi.stubEnv("AWS_ACCESS_KEY_ID", s3.credentials.accessKeyId);
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", s3.credentials.secretAccessKey);
    let result: Awaited<ReturnType<typeof captureOutput>>;
    try {
      result = await captureOutput(() =>
        push([
          join(dir, "src"),
          "cli-run",
          "--bucket",
          s3.bucket,
          "--s3-endpoint",
          s3.endpoint,
          "--part-size",
          "5",
          "--json",
        ]),
      );
    } finally {
      vi.unstubAllEnvs();
    }
    const { code, out, err } = result;
    expect(code, err).toBe(0);
    expect(JSON.parse(out.trim())).toMatchObject({
      target: `s3://${s3.bucket}/cli-run/`,
      files: 2,
      multipart: 1,
      failed: 0,
    });
    expect(md5(await stored("cli-run/sub/big.bin"))).toBe(md5(files.get("sub/big.bin")!));
  });

  it("reports missing credentials as a typed error before any upload", async () => {
    await expect(
      pushToBucket({
        dir: join(dir, "src"),
        url: new URL(`s3://${s3.bucket}/x`),
        s3: { endpoint: s3.endpoint },
        env: {},
      }),
    ).rejects.toMatchObject({ code: S3ErrorCode.CREDENTIALS_MISSING });
    let err = "";
    const e = vi.spyOn(process.stderr, "write").mockImplementation((c) => ((err += String(c)), true));
    try {
      const code = await push([
        join(dir, "src"),
        `s3://${s3.bucket}/x`,
        "--s3-endpoint",
        s3.endpoint,
        "--part-size",
        "1",
      ]);
      expect(code).toBe(2);
    } finally {
      e.mockRestore();
    }
    expect(err).toMatch(/Expected an integer from 1 to 5120|part size of at least 5 MiB/);
  });

  it("reports a refused upload per file, and the others still go", async () => {
    const denied = await startS3Server({ deny: ({ method, path }) => method === "PUT" && path.endsWith("/a.mp4") });
    try {
      const summary = await pushToBucket({
        dir: join(dir, "src"),
        url: new URL(`s3://${denied.bucket}/p`),
        s3: { endpoint: denied.endpoint, region: denied.region, credentials: denied.credentials },
        partSize: 5 * MiB,
      });
      expect(summary.failed).toBe(1);
      expect(summary.errors[0]).toMatchObject({ key: "p/a.mp4", code: S3ErrorCode.ACCESS_DENIED });
      expect(summary.pushed.map((p) => p.key)).toEqual(["p/sub/big.bin"]);
    } finally {
      await denied.close();
    }
  });
});
