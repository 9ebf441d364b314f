import { Hono } from "hono";
import { manifestSigner, publicKeys } from "../../common/manifest-sign.js";
import { InternalError } from "../errors.js";
import type { EdgeEnv } from "../types.js";

/** `GET /v1/keys` (no auth): the Ed25519 public key(s) that verify manifest signatures. */
export const keysRoute = new Hono<EdgeEnv>().get("/", async (c) => {
  const signer = await manifestSigner(c.env.EC_MANIFEST_KEY).catch((cause: unknown) => {
    throw new InternalError(cause);
  });
  return c.json(publicKeys([signer]), 200, { "Cache-Control": "public, max-age=300" });
});
