import { Hono } from "hono";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { boundedBody } from "../http/bounded-body.js";
import { MAX_SIDECAR_BYTES, parseSidecarPath, readLabelSidecar, writeLabelSidecar } from "../labels/sidecar.js";
import type { EdgeEnv } from "../types.js";

/** `/v1/labels/{config}/{etag}/{start}-{frames}-{stride}`: clip label sidecars under `_ec/labels/`, bearer token both ways. */
export const labels = new Hono<EdgeEnv>()
  .get("/:config/:etag/:clip", bearerAuth(), async (c) =>
    c.json(await readLabelSidecar(c.env, parseSidecarPath(c.req.param()))),
  )
  .put("/:config/:etag/:clip", bearerAuth(), async (c) => {
    // Refused before buffering more than the limit, with or without a Content-Length.
    const body = new TextDecoder().decode(await boundedBody(c.req.raw, MAX_SIDECAR_BYTES));
    const stored = await writeLabelSidecar(c.env, parseSidecarPath(c.req.param()), body);
    return c.json({ config: stored.config, etag: stored.etag, start: stored.start }, 201);
  });
