import { Hono } from "hono";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { PayloadTooLargeError } from "../errors.js";
import { MAX_SIDECAR_BYTES, parseSidecarPath, readLabelSidecar, writeLabelSidecar } from "../labels/sidecar.js";
import type { EdgeEnv } from "../types.js";

/** `/v1/labels/{config}/{etag}/{start}-{frames}-{stride}`: clip label sidecars under `_ec/labels/`, bearer token both ways. */
export const labels = new Hono<EdgeEnv>()
  .get("/:config/:etag/:clip", bearerAuth(), async (c) =>
    c.json(await readLabelSidecar(c.env, parseSidecarPath(c.req.param()))),
  )
  .put("/:config/:etag/:clip", bearerAuth(), async (c) => {
    // Refuse an oversized body before buffering it.
    const declared = Number(c.req.header("content-length") ?? "0");
    if (declared > MAX_SIDECAR_BYTES) throw new PayloadTooLargeError(MAX_SIDECAR_BYTES, declared);
    const stored = await writeLabelSidecar(c.env, parseSidecarPath(c.req.param()), await c.req.text());
    return c.json({ config: stored.config, etag: stored.etag, start: stored.start }, 201);
  });
