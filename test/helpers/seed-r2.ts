/**
 * Fills the persisted local R2 of a `wrangler dev --persist-to DIR` edge straight through
 * Miniflare's R2 binding (no HTTP, no queue message): buckets of tens of thousands of objects
 * in seconds, and objects the edge never heard of, as uploads made before ec was deployed.
 * Run it while that edge is stopped; the edge started afterwards sees the objects.
 */
import { join } from "node:path";
import { Miniflare } from "miniflare";

/** The bucket_name of wrangler.toml's BUCKET binding. */
const BUCKET_NAME = "ec-data";

/**
 * @example
 * await seedLocalR2(join(dir, "r2"), [{ key: "late/a.mp4", body: bytes }]);
 */
export async function seedLocalR2(persistDir: string, objects: Iterable<{ key: string; body: Uint8Array }>, concurrency = 64): Promise<number> {
  const mf = new Miniflare({
    modules: true,
    script: "export default { fetch() { return new Response(null, { status: 404 }); } }",
    r2Buckets: { BUCKET: BUCKET_NAME },
    // wrangler dev --persist-to DIR keeps its state under DIR/v3 (getDefaultPersistRoot).
    defaultPersistRoot: join(persistDir, "v3"),
  });
  try {
    const bucket = (await mf.getR2Bucket("BUCKET")) as unknown as { put(key: string, body: Uint8Array): Promise<unknown> };
    const it = objects[Symbol.iterator]();
    let count = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let next = it.next(); !next.done; next = it.next()) {
          await bucket.put(next.value.key, next.value.body);
          count++;
        }
      }),
    );
    return count;
  } finally {
    await mf.dispose();
  }
}
