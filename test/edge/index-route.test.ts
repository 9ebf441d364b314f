import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { decodeIndex } from "../../common/media-index/index.js";
import { signedUrl } from "../../common/sign.js";
import { indexCacheKey } from "../../edge/manifest/object-index.js";
import { BASE, errorCode, INDEX_ROUTE, nowSeconds, put } from "./helpers.js";

const fixtures = inject("mediaFixtures");
const bytesOf = (name: string) => Uint8Array.from(atob(fixtures[name]!.bytes), (c) => c.charCodeAt(0));

function indexUrl(key: string, exp = nowSeconds() + 3600): Promise<string> {
  return signedUrl(BASE, INDEX_ROUTE, key, exp, env.EC_SIGNING_KEY);
}

async function fetchIndex(key: string, extra = "") {
  const res = await SELF.fetch((await indexUrl(key)) + extra);
  return res;
}

beforeAll(async () => {
  for (const name of Object.keys(fixtures)) expect((await put(`ix/${name}`, bytesOf(name))).status).toBe(201);
  expect((await put("ix/empty.mp4", new Uint8Array(0))).status).toBe(201);
  expect((await put("ix/readme.txt", "not media at all")).status).toBe(201);
  expect((await put("ix/fake.mp4", "not media at all, though named .mp4")).status).toBe(201);
});

describe("GET /v1/index/{key} in workerd", () => {
  for (const name of [
    "h264-bframes-tail.mp4",
    "h264-faststart.mp4",
    "hevc.mp4",
    "odd-321x181.mp4",
    "audio.mp4",
    "fragmented.mp4",
  ]) {
    it(`${name}: samples equal ffprobe's packets`, async () => {
      const res = await fetchIndex(`ix/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/vnd.ec.index.v1");
      const index = decodeIndex(new Uint8Array(await res.arrayBuffer()));
      expect(index.etag).toBe(res.headers.get("etag"));
      const packets = fixtures[name]!.packets!;
      const s = index.video!.samples;
      expect(Array.from(s.offset)).toEqual(packets.map((p) => p.pos));
      expect(Array.from(s.size)).toEqual(packets.map((p) => p.size));
      expect(Array.from(s.keyframe, (k) => k === 1)).toEqual(packets.map((p) => p.keyframe));
      expect(Array.from(s.pts)).toEqual(packets.map((p) => p.pts));
    });
  }

  it("builds once, then serves the cached index keyed by etag", async () => {
    const first = await fetchIndex("ix/h264-faststart.mp4");
    const second = await fetchIndex("ix/h264-faststart.mp4");
    expect(second.headers.get("x-ec-index-cache")).toBe("hit");
    expect(new Uint8Array(await second.arrayBuffer())).toEqual(new Uint8Array(await first.arrayBuffer()));
    const head = await env.BUCKET.head("ix/h264-faststart.mp4");
    expect(await env.BUCKET.head(await indexCacheKey(head!.etag, "ix/h264-faststart.mp4"))).not.toBeNull();
  });

  it("indexes an object whose key is near R2's 1024-byte limit (the cache key is hashed)", async () => {
    const key = `ix/${"k".repeat(1000)}.mp4`;
    expect((await put(key, bytesOf("h264-faststart.mp4"))).status).toBe(201);
    const res = await fetchIndex(key);
    expect(res.status).toBe(200);
    expect(decodeIndex(new Uint8Array(await res.arrayBuffer()))).toMatchObject({ kind: "video", key });
    expect((await fetchIndex(key)).headers.get("x-ec-index-cache")).toBe("hit");
    const etag = (await env.BUCKET.head(key))!.etag;
    expect(await indexCacheKey(etag, key)).toBe(`_ec/index/v2/${etag}/sha256-${await sha256Hex(key)}`);
    expect(await env.BUCKET.head(await indexCacheKey(etag, key))).not.toBeNull();
  });

  it("a changed object gets a new index, never the old one", async () => {
    await put("ix/changing.mp4", bytesOf("h264-faststart.mp4"));
    const before = decodeIndex(new Uint8Array(await (await fetchIndex("ix/changing.mp4")).arrayBuffer()));
    await put("ix/changing.mp4", bytesOf("other-version.mp4"));
    const res = await fetchIndex("ix/changing.mp4");
    expect(res.headers.get("x-ec-index-cache")).toBe("miss");
    const after = decodeIndex(new Uint8Array(await res.arrayBuffer()));
    expect(after.etag).not.toBe(before.etag);
    expect(after.video!.width).toBe(128);
    expect(after.video!.frameCount).toBe(10);
    // Pinned to the old etag (as a stale manifest would ask): refused, not answered with the new index.
    const stale = await fetchIndex("ix/changing.mp4", `&etag=${encodeURIComponent(before.etag)}`);
    expect(stale.status).toBe(412);
    const pinned = await fetchIndex("ix/changing.mp4", `&etag=${encodeURIComponent(after.etag)}`);
    expect(pinned.status).toBe(200);
  });

  it("bad objects answer 200 with an error record, never 500", async () => {
    const cases: [string, string][] = [
      ["truncated.mp4", "ERR_TRUNCATED"],
      ["empty.mp4", "ERR_EMPTY_OBJECT"],
      ["fake.mp4", "ERR_UNRECOGNIZED_FORMAT"],
    ];
    for (const [name, code] of cases) {
      const res = await fetchIndex(`ix/${name}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ec-index-kind")).toBe("error");
      const index = decodeIndex(new Uint8Array(await res.arrayBuffer()));
      expect(index).toMatchObject({ kind: "error", key: `ix/${name}`, error: { code } });
    }
  });

  it("images, arrays and other files", async () => {
    const get = async (name: string) =>
      decodeIndex(new Uint8Array(await (await fetchIndex(`ix/${name}`)).arrayBuffer()));
    expect(await get("image.jpg")).toMatchObject({
      kind: "image",
      image: { format: "jpeg", width: 64, height: 48, channels: 3 },
    });
    expect(await get("image.png")).toMatchObject({
      kind: "image",
      image: { format: "png", width: 63, height: 47, channels: 4 },
    });
    expect(await get("array.npy")).toMatchObject({ kind: "array", array: { dtype: "<f4", shape: [4, 5] } });
    expect(await get("readme.txt")).toMatchObject({ kind: "other" });
  });

  it("needs a signature for the index route: an object URL's signature does not open the index", async () => {
    const unsigned = await SELF.fetch(`${BASE}${INDEX_ROUTE}ix/hevc.mp4`);
    expect(unsigned.status).toBe(403);
    const objectSig = new URL(
      await signedUrl(BASE, "/v1/objects/", "ix/hevc.mp4", nowSeconds() + 60, env.EC_SIGNING_KEY),
    ).search;
    const crossed = await SELF.fetch(`${BASE}${INDEX_ROUTE}ix/hevc.mp4${objectSig}`);
    expect(crossed.status).toBe(403);
    expect(await errorCode(crossed)).toBe("ERR_SIGNATURE_INVALID");
    const expired = await SELF.fetch(await indexUrl("ix/hevc.mp4", nowSeconds() - 10));
    expect(await errorCode(expired)).toBe("ERR_SIGNATURE_EXPIRED");
  });

  it("404 for a missing object", async () => {
    const res = await fetchIndex("ix/nope.mp4");
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe("ERR_NOT_FOUND");
  });
});

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}
