import { beforeAll, describe, expect, it } from "vitest";
import { errorCode, get, pattern, put } from "./helpers.js";

const body = pattern(4096, 3);
let etag: string;
let lastModified: string;

beforeAll(async () => {
  const res = await put("cond/obj.bin", body);
  etag = ((await res.json()) as { etag: string }).etag;
  const head = await get("cond/obj.bin", {}, "HEAD");
  lastModified = head.headers.get("last-modified")!;
});

const hourFrom = (date: string, hours: number) => new Date(Date.parse(date) + hours * 3600_000).toUTCString();

describe("If-None-Match / If-Modified-Since → 304", () => {
  it("the current ETag → 304 with validators and no body", async () => {
    const res = await get("cond/obj.bin", { "if-none-match": etag });
    expect(res.status).toBe(304);
    expect(res.headers.get("etag")).toBe(etag);
    expect(await res.text()).toBe("");
  });
  it("* and a weak form of the ETag (weak comparison) → 304", async () => {
    expect((await get("cond/obj.bin", { "if-none-match": "*" })).status).toBe(304);
    expect((await get("cond/obj.bin", { "if-none-match": `"nope", W/${etag}` })).status).toBe(304);
  });
  it("another ETag → 200", async () => {
    const res = await get("cond/obj.bin", { "if-none-match": '"other"' });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
  it("If-Modified-Since at Last-Modified → 304, an hour before → 200", async () => {
    expect((await get("cond/obj.bin", { "if-modified-since": lastModified })).status).toBe(304);
    const res = await get("cond/obj.bin", { "if-modified-since": hourFrom(lastModified, -1) });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
  it("If-None-Match wins over If-Modified-Since", async () => {
    const res = await get("cond/obj.bin", { "if-none-match": '"other"', "if-modified-since": lastModified });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
});

describe("If-Match / If-Unmodified-Since → 412", () => {
  it("another ETag → 412", async () => {
    const res = await get("cond/obj.bin", { "if-match": '"other"' });
    expect(res.status).toBe(412);
    expect(await errorCode(res)).toBe("ERR_PRECONDITION_FAILED");
  });
  it("a weak ETag never matches If-Match (strong comparison)", async () => {
    expect((await get("cond/obj.bin", { "if-match": `W/${etag}` })).status).toBe(412);
  });
  it("the current ETag or * → the range goes ahead", async () => {
    for (const ifMatch of [etag, "*", `"other", ${etag}`]) {
      const res = await get("cond/obj.bin", { "if-match": ifMatch, range: "bytes=0-9" });
      expect(res.status).toBe(206);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(body.slice(0, 10));
    }
  });
  it("If-Unmodified-Since an hour before Last-Modified → 412", async () => {
    expect((await get("cond/obj.bin", { "if-unmodified-since": hourFrom(lastModified, -1) })).status).toBe(412);
    const res = await get("cond/obj.bin", { "if-unmodified-since": hourFrom(lastModified, 1) });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
});

describe("If-Range", () => {
  it("the current ETag → 206", async () => {
    const res = await get("cond/obj.bin", { "if-range": etag, range: "bytes=100-199" });
    expect(res.status).toBe(206);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(body.slice(100, 200));
  });
  it("another ETag → the full 200", async () => {
    const res = await get("cond/obj.bin", { "if-range": '"stale"', range: "bytes=100-199" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-range")).toBeNull();
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(body);
  });
  it("a weak ETag → the full 200", async () => {
    const res = await get("cond/obj.bin", { "if-range": `W/${etag}`, range: "bytes=0-0" });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });
  it("Last-Modified as a date → 206; another date → 200", async () => {
    const same = await get("cond/obj.bin", { "if-range": lastModified, range: "bytes=0-0" });
    expect(same.status).toBe(206);
    await same.arrayBuffer();
    const other = await get("cond/obj.bin", { "if-range": hourFrom(lastModified, -1), range: "bytes=0-0" });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });
  it("an overwritten object makes an old If-Range fetch the whole new body", async () => {
    await put("cond/moving.bin", pattern(100, 1));
    const old = (await get("cond/moving.bin", {}, "HEAD")).headers.get("etag")!;
    const next = pattern(100, 2);
    await put("cond/moving.bin", next);
    const res = await get("cond/moving.bin", { "if-range": old, range: "bytes=0-9" });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).not.toBe(old);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(next);
  });
});
