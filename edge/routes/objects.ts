import { Hono } from "hono";
import { OBJECTS_ROUTE } from "../../common/sign.js";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { objectKey } from "../middleware/object-key.js";
import { signedUrlAuth } from "../middleware/signed-url.js";
import { readObject } from "../objects/read-object.js";
import { writeObject } from "../objects/write-object.js";
import { enqueueIndex } from "../table/enqueue.js";
import type { EdgeEnv } from "../types.js";

/** `/v1/objects/{key}`: PUT with a bearer token (and the key queued for background indexing); GET and HEAD (Hono runs GET for HEAD) with a signed URL. */
export const objects = new Hono<EdgeEnv>()
  .put("/*", bearerAuth(), objectKey({ route: OBJECTS_ROUTE }), async (c) => {
    const written = await writeObject(c.env, {
      key: c.var.key,
      body: c.req.raw.body,
      contentLength: c.req.header("content-length"),
      contentType: c.req.header("content-type"),
    });
    await enqueueIndex(c.env, written);
    return c.json(written, 201, { ETag: written.etag });
  })
  .get("/*", objectKey({ route: OBJECTS_ROUTE }), signedUrlAuth({ route: OBJECTS_ROUTE }), (c) =>
    readObject(c.env, { key: c.var.key, headers: c.req.raw.headers, head: c.req.raw.method === "HEAD" }),
  );
