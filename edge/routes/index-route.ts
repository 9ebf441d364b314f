import { Hono } from "hono";
import { INDEX_ROUTE } from "../../common/sign.js";
import { objectKey } from "../middleware/object-key.js";
import { signedUrlAuth } from "../middleware/signed-url.js";
import { INDEX_CONTENT_TYPE, objectIndex } from "../manifest/object-index.js";
import type { EdgeEnv } from "../types.js";

/**
 * `GET /v1/index/{key}?exp&sig[&etag]` (signed URL): the object's encoded index, built on
 * first request. A corrupt or unsupported object answers 200 with an error record
 * (`X-Ec-Index-Kind: error`), so one bad file never fails a dataset.
 */
export const indexRoute = new Hono<EdgeEnv>().get(
  "/*",
  objectKey({ route: INDEX_ROUTE }),
  signedUrlAuth({ route: INDEX_ROUTE }),
  async (c) => {
    const index = await objectIndex(c.env, { key: c.var.key, expectEtag: c.req.query("etag") });
    return new Response(index.bytes, {
      headers: {
        "Content-Type": INDEX_CONTENT_TYPE,
        ETag: index.etag,
        "X-Ec-Index-Kind": index.kind,
        "X-Ec-Index-Cache": index.cached ? "hit" : "miss",
        "Cache-Control": "private, no-transform",
      },
    });
  },
);
