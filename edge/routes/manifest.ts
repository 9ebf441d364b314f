import { Hono } from "hono";
import { keyProblem, RESERVED_PREFIX } from "../../common/keys.js";
import { BadRequestError, InvalidKeyError, NotFoundError } from "../errors.js";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { buildManifestPage } from "../manifest/build-manifest.js";
import type { EdgeEnv } from "../types.js";

const ROUTE = "/v1/datasets/";
const SUFFIX = "/manifest";

function intQuery(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,16}$/.test(text)) throw new BadRequestError(`Expected ${name} as a positive integer but received ${JSON.stringify(text)}`);
  return Number(text);
}

/** `GET /v1/datasets/{prefix}/manifest?cursor&limit&shardBytes` (bearer): one signed manifest page. */
export const manifestRoute = new Hono<EdgeEnv>().get("/*", bearerAuth(), async (c) => {
  const url = new URL(c.req.url);
  const path = url.pathname.slice(ROUTE.length);
  if (!url.pathname.startsWith(ROUTE) || !path.endsWith(SUFFIX)) throw new NotFoundError("No such route");
  let prefix: string;
  try {
    prefix = decodeURIComponent(path.slice(0, -SUFFIX.length));
  } catch {
    throw new InvalidKeyError(`Expected a percent-encoded dataset prefix but received ${JSON.stringify(path)}`);
  }
  // "_ec" itself passes the key rules, but its listing would be the reserved prefix.
  const problem = keyProblem(`${prefix}/x`) ?? (`${prefix}/`.startsWith(RESERVED_PREFIX) ? `Expected a dataset prefix outside ${RESERVED_PREFIX} but received ${JSON.stringify(prefix)}` : undefined);
  if (problem !== undefined) throw new InvalidKeyError(problem.replace("object key", "dataset prefix"));
  const page = await buildManifestPage(c.env, {
    prefix,
    edge: url.origin,
    cursor: c.req.query("cursor"),
    limit: intQuery("limit", c.req.query("limit")),
    shardBytes: intQuery("shardBytes", c.req.query("shardBytes")),
  });
  return c.json(page, 200, { "Cache-Control": "no-store" });
});
