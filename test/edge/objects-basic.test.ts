import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, errorCode, get, pattern, put } from "./helpers.js";

describe("objects: PUT then GET", () => {
  it("stores a body and serves it back whole with validators", async () => {
    const body = pattern(1000);
    const res = await put("basic/a.bin", body, { "content-type": "video/mp4" });
    expect(res.status).toBe(201);
    const written = (await res.json()) as { key: string; size: number; etag: string };
    expect(written).toMatchObject({ key: "basic/a.bin", size: 1000 });
    const got = await get("basic/a.bin");
    expect(got.status).toBe(200);
    expect(got.headers.get("etag")).toBe(written.etag);
    expect(got.headers.get("accept-ranges")).toBe("bytes");
    expect(got.headers.get("content-type")).toBe("video/mp4");
    expect(got.headers.get("content-length")).toBe("1000");
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(body);
  });

  it("answers health without auth and unknown routes with a JSON 404", async () => {
    expect((await SELF.fetch(`${BASE}/v1/health`)).status).toBe(200);
    const res = await SELF.fetch(`${BASE}/v1/nope`);
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe("ERR_NOT_FOUND");
  });
});
