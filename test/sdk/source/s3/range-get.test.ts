import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rangeGet, S3ErrorCode } from "../../../../sdk/source/s3/index.js";

/**
 * A loopback server that misbehaves on purpose, per path: it ignores If-Match, ignores Range,
 * or fails before it answers, so rangeGet's own checks are what stand between it and wrong bytes.
 */
const body = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 251));
let etag = '"v1"';
let flaky = 0;
let server: Server;
let base: string;
const context = { endpoint: "test", region: "auto", bucket: "b", key: "k", action: "read" };

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    if (path === "/flaky" && flaky-- > 0) return void res.writeHead(503).end();
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    res.setHeader("etag", etag);
    if (path === "/no-range" || !m) return void res.writeHead(200, { "content-length": body.length }).end(body);
    const [start, end] = [Number(m[1]), Number(m[2])];
    const slice = path === "/short" ? body.subarray(start, end) : body.subarray(start, end + 1);
    res
      .writeHead(206, { "content-range": `bytes ${start}-${end}/${body.length}`, "content-length": slice.length })
      .end(slice);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const target = (path: string, listed = '"v1"') => ({ url: `${base}${path}`, etag: listed, size: body.length });

describe("rangeGet", () => {
  it("returns exactly the bytes asked for", async () => {
    expect(Buffer.from(await rangeGet(target("/ok"), 100, 900, context)).equals(body.subarray(100, 1000))).toBe(true);
  });

  it("refuses bytes of another version even when the server ignores If-Match", async () => {
    etag = '"v2"';
    try {
      await expect(rangeGet(target("/ok"), 0, 10, context)).rejects.toMatchObject({
        code: S3ErrorCode.OBJECT_CHANGED,
        message: expect.stringMatching(/ETag "v2", listed "v1"/),
      });
    } finally {
      etag = '"v1"';
    }
  });

  it("never keeps a slice of a whole-object 200 to a partial range", async () => {
    await expect(rangeGet(target("/no-range"), 10, 10, context)).rejects.toMatchObject({
      code: S3ErrorCode.REQUEST_FAILED,
      message: expect.stringMatching(/ignored the Range header/),
    });
    expect((await rangeGet(target("/no-range"), 0, body.length, context)).length).toBe(body.length);
  });

  it("retries 5xx and short bodies, then reports them", async () => {
    flaky = 2;
    expect((await rangeGet(target("/flaky"), 0, 16, context)).length).toBe(16);
    // A short body resumes from its first missing byte: the first attempt moves 15 of the 16
    // bytes and is not counted, the two that move none spend the budget.
    await expect(rangeGet(target("/short"), 0, 16, context, { attempts: 2 })).rejects.toMatchObject({
      code: S3ErrorCode.REQUEST_FAILED,
      message: expect.stringMatching(/after 3 attempt\(s\): short body: 0 of 1 bytes/),
    });
  });

  it("rejects a range outside the listed size before any request", async () => {
    await expect(rangeGet(target("/ok"), body.length - 1, 2, context)).rejects.toThrow(
      /Expected a range inside the 4096-byte object/,
    );
  });
});
