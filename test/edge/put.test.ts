import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LengthRequiredError, PayloadTooLargeError, BadRequestError } from "../../edge/errors.js";
import { MAX_PUT_BYTES, writeObject } from "../../edge/objects/write-object.js";
import { errorCode, get, pattern, put } from "./helpers.js";

function chunked(data: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(data);
      controller.close();
    },
  });
}

describe("PUT /v1/objects/{key}", () => {
  it("a body without Content-Length (chunked) → 411 LENGTH_REQUIRED", async () => {
    const res = await put("put/chunked.bin", chunked(pattern(100)));
    expect(res.status).toBe(411);
    expect(await errorCode(res)).toBe("ERR_LENGTH_REQUIRED");
    expect((await get("put/chunked.bin")).status).toBe(404);
  });

  it("a FixedLengthStream body streams in and reads back byte-exact", async () => {
    const data = pattern(300_000, 5);
    const fixed = new FixedLengthStream(data.byteLength);
    const pump = chunked(data).pipeTo(fixed.writable);
    const res = await put("put/fixed.bin", fixed.readable);
    await pump;
    expect(res.status).toBe(201);
    expect(new Uint8Array(await (await get("put/fixed.bin")).arrayBuffer())).toEqual(data);
  });

  it("a 0-byte body is stored", async () => {
    const res = await put("put/zero.bin", new Uint8Array(0));
    expect(res.status).toBe(201);
    expect(((await res.json()) as { size: number }).size).toBe(0);
  });

  it("an overwrite gives a new ETag and the new bytes", async () => {
    const first = (await (await put("put/over.bin", "one")).json()) as { etag: string };
    const second = await put("put/over.bin", "two");
    expect(second.headers.get("etag")).not.toBe(first.etag);
    expect(await (await get("put/over.bin")).text()).toBe("two");
  });

  it("writeObject refuses a missing, malformed or too large Content-Length before reading a byte", async () => {
    const args = { key: "put/direct.bin", body: chunked(pattern(10)), contentType: undefined };
    await expect(writeObject(env, { ...args, contentLength: undefined })).rejects.toBeInstanceOf(LengthRequiredError);
    await expect(writeObject(env, { ...args, contentLength: "-1" })).rejects.toBeInstanceOf(BadRequestError);
    await expect(writeObject(env, { ...args, contentLength: "1e3" })).rejects.toBeInstanceOf(BadRequestError);
    await expect(writeObject(env, { ...args, contentLength: String(MAX_PUT_BYTES + 1) })).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
  });

  it("writeObject refuses a body shorter than its Content-Length and stores nothing", async () => {
    const err = await writeObject(env, {
      key: "put/short.bin",
      body: chunked(pattern(10)),
      contentLength: "20",
      contentType: undefined,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(await env.BUCKET.head("put/short.bin")).toBeNull();
  });
});
