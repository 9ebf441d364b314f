import { beforeAll, describe, expect, it } from "vitest";
import { errorCode, get, pattern, put } from "./helpers.js";

const SIZE = 10_000;
const body = pattern(SIZE, 11);

async function bytes(res: Response): Promise<Uint8Array> {
  return new Uint8Array(await res.arrayBuffer());
}

beforeAll(async () => {
  expect((await put("range/obj.bin", body)).status).toBe(201);
  expect((await put("range/empty.bin", new Uint8Array(0))).status).toBe(201);
});

describe("single byte ranges → 206 with exact Content-Range and Content-Length", () => {
  const cases: [string, number, number][] = [
    ["bytes=0-0", 0, 0], // first byte
    [`bytes=${SIZE - 1}-${SIZE - 1}`, SIZE - 1, SIZE - 1], // last byte
    ["bytes=-1", SIZE - 1, SIZE - 1], // last byte as a suffix
    ["bytes=100-199", 100, 199],
    ["bytes=9000-", 9000, SIZE - 1],
    ["bytes=-500", SIZE - 500, SIZE - 1],
    [`bytes=-${SIZE * 3}`, 0, SIZE - 1], // suffix longer than the object: all of it
    [`bytes=9990-${SIZE * 5}`, 9990, SIZE - 1], // last-pos past the end is clamped
    ["bytes=0-", 0, SIZE - 1],
    ["BYTES = 5-9", 5, 9], // unit is case-insensitive, whitespace allowed
    ["bytes=10-19, ", 10, 19], // empty list elements do not count
  ];
  for (const [header, start, end] of cases) {
    it(header, async () => {
      const res = await get("range/obj.bin", { range: header });
      expect(res.status).toBe(206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/${SIZE}`);
      expect(res.headers.get("content-length")).toBe(String(end - start + 1));
      expect(res.headers.get("accept-ranges")).toBe("bytes");
      expect(await bytes(res)).toEqual(body.slice(start, end + 1));
    });
  }
});

describe("unsatisfiable → 416 with Content-Range: bytes */size", () => {
  for (const header of [`bytes=${SIZE}-`, `bytes=${SIZE}-${SIZE + 10}`, "bytes=-0", "bytes=99999999999999999999-"]) {
    it(header, async () => {
      const res = await get("range/obj.bin", { range: header });
      expect(res.status).toBe(416);
      expect(res.headers.get("content-range")).toBe(`bytes */${SIZE}`);
      expect(await errorCode(res)).toBe("ERR_RANGE_NOT_SATISFIABLE");
    });
  }
});

describe("malformed and multi-range headers are ignored: full 200", () => {
  for (const header of ["bytes=abc", "items=0-1", "bytes=5-2", "bytes 0-1", "bytes=", "bytes=1-2-3", "bytes=0-1,4-5", "bytes=-5,0-1"]) {
    it(JSON.stringify(header), async () => {
      const res = await get("range/obj.bin", { range: header });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-range")).toBeNull();
      expect(res.headers.get("content-length")).toBe(String(SIZE));
      expect(await bytes(res)).toEqual(body);
    });
  }
});

describe("a 0-byte object", () => {
  it("GET → empty 200", async () => {
    const res = await get("range/empty.bin");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe("0");
    expect((await bytes(res)).byteLength).toBe(0);
  });
  it("bytes=0-0 → 416 bytes */0", async () => {
    const res = await get("range/empty.bin", { range: "bytes=0-0" });
    expect(res.status).toBe(416);
    expect(res.headers.get("content-range")).toBe("bytes */0");
  });
  it("a suffix range → the empty 200 (no Content-Range can describe an empty span)", async () => {
    const res = await get("range/empty.bin", { range: "bytes=-10" });
    expect(res.status).toBe(200);
    expect((await bytes(res)).byteLength).toBe(0);
  });
});

describe("HEAD and transport details", () => {
  it("HEAD has GET's headers and no body", async () => {
    const full = await get("range/obj.bin");
    const head = await get("range/obj.bin", {}, "HEAD");
    expect(head.status).toBe(200);
    for (const h of ["etag", "last-modified", "content-length", "accept-ranges", "content-type", "cache-control", "content-encoding"]) {
      expect(head.headers.get(h)).toBe(full.headers.get(h));
    }
    expect((await bytes(head)).byteLength).toBe(0);
    await full.arrayBuffer();
  });
  it("HEAD ignores Range (RFC 9110 §14.2: range handling is defined for GET only)", async () => {
    const head = await get("range/obj.bin", { range: "bytes=0-9" }, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(SIZE));
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
