import { env, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { ManifestErrorCode, verifyManifest } from "../../common/manifest-sign.js";
import { decodeIndex } from "../../common/media-index/index.js";
import { PublicKeysV1, SignedManifestV1, type ManifestV1 } from "../../common/schema/index.js";
import { groupShards } from "../../common/shards.js";
import { BASE, errorCode, put, TOKEN } from "./helpers.js";

const COUNT = 23;
const auth = { authorization: `Bearer ${TOKEN}` };

async function keys(): Promise<PublicKeysV1> {
  const res = await SELF.fetch(`${BASE}/v1/keys`);
  expect(res.status).toBe(200);
  return PublicKeysV1.parse(await res.json());
}

async function page(prefix: string, query = ""): Promise<SignedManifestV1> {
  const res = await SELF.fetch(`${BASE}/v1/datasets/${prefix}/manifest${query}`, { headers: auth });
  expect(res.status).toBe(200);
  return SignedManifestV1.parse(await res.json());
}

async function allPages(prefix: string, query: string): Promise<ManifestV1[]> {
  const k = await keys();
  const pages: ManifestV1[] = [];
  let cursor: string | null = null;
  do {
    const signed = await page(prefix, `${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    const manifest = await verifyManifest(signed, k);
    pages.push(manifest);
    cursor = manifest.cursor;
  } while (cursor);
  return pages;
}

beforeAll(async () => {
  for (let i = 0; i < COUNT; i++) {
    expect((await put(`mds/clip-${String(i).padStart(3, "0")}.mp4`, new Uint8Array(100 + i))).status).toBe(201);
  }
  await put("mds/sub/dir/deep.npy", new Uint8Array(10));
  await put("mds-other/not-mine.mp4", new Uint8Array(5));
  // Index cache entries live beside user data; they must never show up in a manifest.
  await env.BUCKET.put("_ec/index/v1/x/mds/clip-000.mp4", "cache");
});

describe("GET /v1/datasets/{prefix}/manifest", () => {
  it("pages return every object under the prefix exactly once, with unique shard ids", async () => {
    const pages = await allPages("mds", "?limit=7&shardBytes=300");
    expect(pages.length).toBe(Math.ceil((COUNT + 1) / 7));
    const keysSeen = pages.flatMap((p) => p.objects.map((o) => o.key));
    expect(keysSeen.length).toBe(COUNT + 1);
    expect(new Set(keysSeen).size).toBe(COUNT + 1);
    expect(keysSeen.every((k) => k.startsWith("mds/"))).toBe(true);
    expect(keysSeen).toContain("mds/sub/dir/deep.npy");
    const shardIds = pages.flatMap((p) => p.shards.map((s) => s.id));
    expect(shardIds).toEqual(shardIds.map((_, i) => i));
    for (const p of pages) {
      // Shards tile the page's objects contiguously.
      let next = 0;
      for (const s of p.shards) {
        expect(s.first).toBe(next);
        expect(s.bytes).toBe(p.objects.slice(s.first, s.first + s.count).reduce((a, o) => a + o.size, 0));
        next += s.count;
      }
      expect(next).toBe(p.objects.length);
    }
  });

  it("signed URLs in the manifest open the object and its index", async () => {
    const [first] = await allPages("mds", "?limit=1000");
    const obj = first!.objects.find((o) => o.key === "mds/clip-005.mp4")!;
    expect(obj).toMatchObject({ size: 105, kind: "video" });
    expect(first!.expiresAt - first!.createdAt).toBe(Number(env.EC_URL_TTL_SECONDS));
    const bytes = await SELF.fetch(obj.url);
    expect(bytes.status).toBe(200);
    expect((await bytes.arrayBuffer()).byteLength).toBe(105);
    const index = await SELF.fetch(obj.indexUrl);
    expect(index.status).toBe(200);
    // 105 zero bytes named .mp4: an error record, pinned to the listed etag.
    expect(decodeIndex(new Uint8Array(await index.arrayBuffer()))).toMatchObject({ kind: "error", etag: obj.etag });
  });

  it("default shard target comes from EC_SHARD_TARGET_BYTES: one shard for small objects", async () => {
    const [only] = await allPages("mds", "");
    expect(only!.shards).toEqual([
      { id: 0, first: 0, count: COUNT + 1, bytes: only!.objects.reduce((a, o) => a + o.size, 0) },
    ]);
  });

  it("tampered manifests fail verification", async () => {
    const k = await keys();
    const signed = await page("mds", "?limit=3");
    await expect(verifyManifest(signed, k)).resolves.toMatchObject({ dataset: "mds" });
    const payload = signed.payload.replace('"size":100', '"size":999');
    expect(payload).not.toBe(signed.payload);
    await expect(verifyManifest({ ...signed, payload }, k)).rejects.toMatchObject({
      code: ManifestErrorCode.SIGNATURE,
    });
    const flipped = (signed.signature[0] === "A" ? "B" : "A") + signed.signature.slice(1);
    await expect(verifyManifest({ ...signed, signature: flipped }, k)).rejects.toMatchObject({
      code: ManifestErrorCode.SIGNATURE,
    });
    await expect(verifyManifest({ ...signed, keyId: "someone-else" }, k)).rejects.toMatchObject({
      code: ManifestErrorCode.UNKNOWN_KEY,
    });
    const later = JSON.parse(signed.payload).expiresAt + 1;
    await expect(verifyManifest(signed, k, { now: later })).rejects.toMatchObject({ code: ManifestErrorCode.EXPIRED });
  });

  it("needs a bearer token", async () => {
    const res = await SELF.fetch(`${BASE}/v1/datasets/mds/manifest`);
    expect(res.status).toBe(401);
  });

  it("rejects bad queries and reserved prefixes with 400", async () => {
    for (const q of ["?limit=0", "?limit=1001", "?limit=abc", "?shardBytes=-1", "?cursor=garbage"]) {
      const res = await SELF.fetch(`${BASE}/v1/datasets/mds/manifest${q}`, { headers: auth });
      expect(res.status, q).toBe(400);
    }
    for (const prefix of ["_ec", "_ec/index", "a//b", "a%2F", "%2Fabs", "bad%01name"]) {
      const res = await SELF.fetch(`${BASE}/v1/datasets/${prefix}/manifest`, { headers: auth });
      expect(res.status, prefix).toBe(400);
      expect(await errorCode(res)).toBe("ERR_INVALID_KEY");
    }
  });

  it("an empty prefix lists nothing and ends at once", async () => {
    const [only] = await allPages("nothing-here", "");
    expect(only).toMatchObject({ objects: [], shards: [], cursor: null });
  });
});

describe("groupShards", () => {
  it("closes a shard when it reaches the target; an oversized object stands alone", () => {
    expect(groupShards([100, 200, 50, 1000, 10], 250, 5)).toEqual([
      { id: 5, first: 0, count: 2, bytes: 300 },
      { id: 6, first: 2, count: 2, bytes: 1050 },
      { id: 7, first: 4, count: 1, bytes: 10 },
    ]);
    expect(groupShards([], 10, 0)).toEqual([]);
  });
});
