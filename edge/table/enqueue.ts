import type { IndexMessageV1 } from "../../common/schema/index.js";

/**
 * Queues a stored object for background indexing. The object is stored either way: a failed
 * send is logged, and the object is still indexed on its first index request.
 */
export async function enqueueIndex(env: Env, written: { key: string; etag: string }): Promise<void> {
  try {
    await env.INDEX_QUEUE.send({ type: "index", key: written.key, etag: written.etag } satisfies IndexMessageV1);
  } catch (err) {
    console.error(
      JSON.stringify({
        msg: "index queue: send failed",
        key: written.key,
        error: String((err as Error)?.message ?? err),
      }),
    );
  }
}
