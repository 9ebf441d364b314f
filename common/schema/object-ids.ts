/**
 * Objects named by a short id on the cache's control API: a client registers an object's signed
 * URL (and ETag) under an id of its choosing once, in `objects` of a plan or a batched locate,
 * and names it by `object: id` from then on instead of sending the URL with every window. Ids are
 * the client's own (scoped by its `client` name); registering an id again refreshes its URL (a
 * re-signed one). The cache keeps the most recently used OBJECT_IDS_MAX of them; a request naming
 * an id it does not hold is refused whole with ERR_OBJECT_ID_UNKNOWN, and the client sends it
 * again with its objects registered.
 */
import { z } from "zod";

/** Ids the cache keeps, over all clients (least recently used dropped first): ~2 KiB of signed URL each, ≤ 32 MiB. */
export const OBJECT_IDS_MAX = 16_384;

export const OBJECT_ID_UNKNOWN = "ERR_OBJECT_ID_UNKNOWN";

export const ObjectId = z.string().min(1).max(64);

/** An object registered under `id`: what a span naming it by `object: id` reads. */
export const ObjectRef = z.object({
  id: ObjectId,
  url: z.string().min(1),
  etag: z.string().min(1).optional(),
});
export type ObjectRef = z.infer<typeof ObjectRef>;
