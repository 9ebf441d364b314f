import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main as inspect } from "../../../sdk/cli/inspect.js";
import { main as stream } from "../../../sdk/cli/stream.js";
import type { S3TestServer } from "../../helpers/s3-server.js";
import { type S3Videos, startS3Videos } from "../../helpers/s3-videos.js";

let fixture: S3Videos;
let s3: S3TestServer;
let expectedMd5: string[];

beforeAll(async () => {
  fixture = await startS3Videos(
    "ec-s3-cli-",
    { "cli/v.mp4": { codec: "h264", width: 64, height: 48, frames: 20, gop: 5, bframes: 1 } },
    { truncated: { key: "cli/broken.mp4", of: "cli/v.mp4", bytes: 2000 } },
  );
  s3 = fixture.s3;
  expectedMd5 = fixture.md5s.get("cli/v.mp4")!;
  // What a user exports for a non-AWS endpoint; the CLI takes nothing else.
  vi.stubEnv("AWS_ENDPOINT_URL_S3", s3.endpoint);
  vi.stubEnv("AWS_ACCESS_KEY_ID", s3.credentials.accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", s3.credentials.secretAccessKey);
  vi.stubEnv("EC_INDEX_CACHE_DIR", join(fixture.dir, "index-cache"));
}, 60_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await fixture?.close();
});

async function capture(fn: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const o = vi.spyOn(process.stdout, "write").mockImplementation((c) => ((out += String(c)), true));
  const e = vi.spyOn(process.stderr, "write").mockImplementation((c) => ((err += String(c)), true));
  try {
    return { code: await fn(), out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

describe("the CLI with s3:// dataset URLs", () => {
  it("ec inspect s3://… summarizes the bucket prefix from client-built indexes", async () => {
    const r = await capture(() => inspect([`s3://${s3.bucket}/cli`, "--json"]));
    expect(r.code, r.err).toBe(0);
    const summary = JSON.parse(r.out.trim());
    expect(summary).toMatchObject({
      dataset: "cli",
      objects: 2,
      byKind: { video: 1, error: 1 },
      codecs: { h264: 1 },
      resolutions: { "64x48": 1 },
      frames: 20,
    });
    expect(summary.errors).toEqual([expect.objectContaining({ key: "cli/broken.mp4", code: "ERR_TRUNCATED" })]);
  });

  it("ec inspect s3://… --index NAME prints one object's index", async () => {
    const r = await capture(() => inspect([`s3://${s3.bucket}/cli`, "--index", "v.mp4", "--json"]));
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out.trim())).toMatchObject({ key: "cli/v.mp4", kind: "video" });
  });

  it("ec stream s3://… --md5 prints frames equal to ffmpeg's", async () => {
    const r = await capture(() =>
      stream([
        `s3://${s3.bucket}/cli`,
        "--frames",
        "2",
        "--stride",
        "2",
        "--format",
        "native",
        "--md5",
        "--json",
        "--device",
        "cpu",
      ]),
    );
    expect(r.code, r.err).toBe(0);
    const lines = r.out.trim().split("\n");
    const summary = JSON.parse(lines.pop()!);
    expect(summary).toMatchObject({ errors: { ERR_TRUNCATED: 1 } });
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const [key, index, md5] = line.split(",");
      expect(key).toBe("cli/v.mp4");
      expect(md5).toBe(expectedMd5[Number(index)]);
    }
  });

  it("ec stream s3://… says once that the bucket has no table, then that it planned from the local table", async () => {
    vi.stubEnv("EC_INDEX_CACHE_DIR", join(fixture.dir, "index-cache-notice"));
    const notices: string[] = [];
    const listen = (w: Error & { code?: string }) => {
      if (w.code === "ERR_TABLE_MISSING") notices.push(w.message);
    };
    process.on("warning", listen);
    try {
      for (let i = 0; i < 2; i++) {
        const r = await capture(() => stream([`s3://${s3.bucket}/cli`, "--frames", "4", "--json", "--device", "cpu"]));
        expect(r.code, r.err).toBe(0);
      }
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", listen);
      vi.stubEnv("EC_INDEX_CACHE_DIR", join(fixture.dir, "index-cache"));
    }
    expect(notices).toEqual([
      expect.stringContaining("planning from every object's index"),
      expect.stringContaining("planned from the local table"),
    ]);
  });

  it("--s3-endpoint (with --region) stands in for AWS_ENDPOINT_URL_S3 in ec inspect and ec stream", async () => {
    vi.stubEnv("AWS_ENDPOINT_URL_S3", "");
    try {
      const flags = ["--s3-endpoint", s3.endpoint, "--region", "us-east-1"];
      const i = await capture(() => inspect([`s3://${s3.bucket}/cli`, "--json", ...flags]));
      expect(i.code, i.err).toBe(0);
      expect(JSON.parse(i.out.trim())).toMatchObject({ dataset: "cli", objects: 2, frames: 20 });
      const r = await capture(() =>
        stream([
          `s3://${s3.bucket}/cli`,
          "--frames",
          "2",
          "--format",
          "native",
          "--md5",
          "--json",
          "--device",
          "cpu",
          ...flags,
        ]),
      );
      expect(r.code, r.err).toBe(0);
      const lines = r.out.trim().split("\n");
      lines.pop();
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line.split(",")[2]).toBe(expectedMd5[Number(line.split(",")[1])]);
    } finally {
      vi.stubEnv("AWS_ENDPOINT_URL_S3", s3.endpoint);
    }
  });

  it("a missing credential is one clear line, not a stack", async () => {
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "");
    try {
      const r = await capture(() => inspect([`s3://${s3.bucket}/cli`]));
      expect(r.code).toBe(1);
      expect(r.err).toMatch(
        /ERR_S3_CREDENTIALS_MISSING: .*only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set/,
      );
    } finally {
      vi.stubEnv("AWS_SECRET_ACCESS_KEY", s3.credentials.secretAccessKey);
    }
  });
});
