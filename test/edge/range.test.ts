import { beforeAll, describe, expect, it } from "vitest";
import { caseHeaders, checkAnswer, RANGE_CASES, RANGE_OBJECT_SIZE } from "../common/byte-range-cases.js";
import { errorCode, get, pattern, put } from "./helpers.js";

const SIZE = RANGE_OBJECT_SIZE;
const body = pattern(SIZE, 11);

async function bytes(res: Response): Promise<Uint8Array> {
  return new Uint8Array(await res.arrayBuffer());
}

beforeAll(async () => {
  expect((await put("range/obj.bin", body)).status).toBe(201);
  expect((await put("range/empty.bin", new Uint8Array(0))).status).toBe(201);
});

describe("the shared table of Range / If-Range / If-Match cases (test/common/byte-range-cases.ts)", () => {
  for (const c of RANGE_CASES) {
    it(c.name, async () => {
      const key = c.object === "empty" ? "range/empty.bin" : "range/obj.bin";
      const head = await get(key, {}, "HEAD");
      const etag = head.headers.get("etag") ?? "";
      const res = await get(key, caseHeaders(c, etag), c.method ?? "GET");
      const got = {
        status: res.status,
        contentRange: res.headers.get("content-range"),
        contentLength: res.headers.get("content-length"),
        body: await bytes(res),
      };
      expect(checkAnswer(c, c.object === "empty" ? new Uint8Array(0) : body, got)).toEqual([]);
      if (c.expect.status === 206 || c.expect.status === 200) expect(res.headers.get("accept-ranges")).toBe("bytes");
    });
  }
  it("a 416 is a JSON ERR_RANGE_NOT_SATISFIABLE", async () => {
    const res = await get("range/obj.bin", { range: `bytes=${SIZE}-` });
    expect(res.status).toBe(416);
    expect(await errorCode(res)).toBe("ERR_RANGE_NOT_SATISFIABLE");
  });
});

describe("HEAD and transport details", () => {
  it("HEAD has GET's headers and no body", async () => {
    const full = await get("range/obj.bin");
    const head = await get("range/obj.bin", {}, "HEAD");
    expect(head.status).toBe(200);
    for (const h of [
      "etag",
      "last-modified",
      "content-length",
      "accept-ranges",
      "content-type",
      "cache-control",
      "content-encoding",
    ]) {
      expect(head.headers.get(h)).toBe(full.headers.get(h));
    }
    expect((await bytes(head)).byteLength).toBe(0);
    await full.arrayBuffer();
  });
  it("ranges are never compressed", async () => {
    const res = await get("range/obj.bin", { range: "bytes=0-99", "accept-encoding": "gzip, br" });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-encoding")).toBe("identity");
    expect(res.headers.get("cache-control")).toContain("no-transform");
    expect((await bytes(res)).byteLength).toBe(100);
  });
  it("a missing object → 404 JSON", async () => {
    const res = await get("range/missing.bin");
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe("ERR_NOT_FOUND");
  });
});
