/**
 * Fills the persisted local R2 of a `wrangler dev --persist-to DIR` edge straight from Node
 * (no edge, no queue message): buckets of tens of thousands of objects in seconds, and objects
 * the edge never heard of, as uploads made before ec was deployed. A throwaway Worker in
 * Miniflare, bound to the same bucket and persistence, stores each batch with one request.
 * Run it while that edge is stopped; the edge started afterwards sees the objects.
 */
import { join } from "node:path";
import { Miniflare } from "miniflare";

/** The bucket_name of wrangler.toml's BUCKET binding. */
const BUCKET_NAME = "ec-data";
const BATCH = 256;

export interface SeedObject {
  readonly key: string;
  readonly body: Uint8Array | string;
  readonly httpMetadata?: { contentType?: string; contentEncoding?: string };
  readonly customMetadata?: Record<string, string>;
}

const SEEDER = `export default {
  async fetch(req, env) {
    const items = await req.json();
    await Promise.all(items.map((it) => env.BUCKET.put(it.key, Uint8Array.from(atob(it.body), (c) => c.charCodeAt(0)), { httpMetadata: it.http, customMetadata: it.custom })));
    return new Response(String(items.length));
  },
};`;

/**
 * @example
 * await seedLocalR2(join(dir, "r2"), [{ key: "late/a.mp4", body: bytes }]);
 */
export async function seedLocalR2(persistDir: string, objects: Iterable<SeedObject>, concurrency = 4): Promise<number> {
  const mf = new Miniflare({
    modules: true,
    script: SEEDER,
    r2Buckets: { BUCKET: BUCKET_NAME },
    // wrangler dev --persist-to DIR keeps its state under DIR/v3 (getDefaultPersistRoot).
    defaultPersistRoot: join(persistDir, "v3"),
  });
  try {
    const it = objects[Symbol.iterator]();
    let count = 0;
    const take = () => {
      const batch = [];
      while (batch.length < BATCH) {
        const next = it.next();
        if (next.done) break;
        const o = next.value;
        const bytes = typeof o.body === "string" ? new TextEncoder().encode(o.body) : o.body;
        batch.push({
          key: o.key,
          body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"),
          http: o.httpMetadata,
          custom: o.customMetadata,
        });
      }
      return batch;
    };
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let batch = take(); batch.length > 0; batch = take()) {
          const res = await mf.dispatchFetch("http://seed/", { method: "POST", body: JSON.stringify(batch) });
          if (!res.ok) throw new Error(`seeding the local R2 failed: ${res.status} ${await res.text()}`);
          count += Number(await res.text());
        }
      }),
    );
    return count;
  } finally {
    await mf.dispose();
  }
}
