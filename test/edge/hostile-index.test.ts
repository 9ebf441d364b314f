import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { decodeIndex } from "../../common/media-index/index.js";
import { signedUrl } from "../../common/sign.js";
import { npyLongHeader, webmTinyBlocks } from "../helpers/hostile-media.js";
import { BASE, INDEX_ROUTE, nowSeconds, put } from "./helpers.js";

async function fetchIndex(key: string): Promise<Response> {
  return SELF.fetch(await signedUrl(BASE, INDEX_ROUTE, key, nowSeconds() + 3600, env.EC_SIGNING_KEY));
}

describe("a crafted object past the memory of one index build, in workerd", () => {
  it("is an ERR_INDEX_MEMORY_LIMIT record the first time, cached: the next GET builds nothing", {
    timeout: 60_000,
  }, async () => {
    // 200,000 one-byte blocks in 1.4 MB: more samples than a 32 MiB build holds.
    expect((await put("hostile/tiny-blocks.webm", webmTinyBlocks(200_000))).status).toBe(201);
    const first = await fetchIndex("hostile/tiny-blocks.webm");
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ec-index-cache")).toBe("miss");
    const index = decodeIndex(new Uint8Array(await first.arrayBuffer()));
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_INDEX_MEMORY_LIMIT" } });
    const second = await fetchIndex("hostile/tiny-blocks.webm");
    expect(second.headers.get("x-ec-index-cache")).toBe("hit");
    expect(decodeIndex(new Uint8Array(await second.arrayBuffer())).error?.code).toBe("ERR_INDEX_MEMORY_LIMIT");
  });

  it("an .npy whose header length says 20 MiB is a corrupt record, its header never read", {
    timeout: 60_000,
  }, async () => {
    expect((await put("hostile/long-header.npy", npyLongHeader(20 << 20))).status).toBe(201);
    const res = await fetchIndex("hostile/long-header.npy");
    expect(res.status).toBe(200);
    const index = decodeIndex(new Uint8Array(await res.arrayBuffer()));
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_CORRUPT_MEDIA" } });
  });
});
