import { Hono } from "hono";
import { BadRequestError, NotFoundError } from "../errors.js";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { buildManifestPage } from "../manifest/build-manifest.js";
import type { EdgeEnv } from "../types.js";
import { datasetPrefix } from "./dataset-prefix.js";

const ROUTE = "/v1/datasets/";
const SUFFIX = "/manifest";

export function intQuery(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,16}$/.test(text))
    throw new BadRequestError(`Expected ${name} as a positive integer but received ${JSON.stringify(text)}`);
  return Number(text);
}

/** `GET /v1/datasets/{prefix}/manifest?cursor&limit&shardBytes` (bearer): one signed manifest page. */
export const manifestRoute = new Hono<EdgeEnv>().get("/*", bearerAuth(), async (c) => {
  const url = new URL(c.req.url);
  const path = url.pathname.slice(ROUTE.length);
  if (!url.pathname.startsWith(ROUTE) || !path.endsWith(SUFFIX)) throw new NotFoundError("No such route");
  const prefix = datasetPrefix(path.slice(0, -SUFFIX.length));
  const page = await buildManifestPage(c.env, {
    prefix,
    edge: url.origin,
    cursor: c.req.query("cursor"),
    limit: intQuery("limit", c.req.query("limit")),
    shardBytes: intQuery("shardBytes", c.req.query("shardBytes")),
  });
  return c.json(page, 200, { "Cache-Control": "no-store" });
});
