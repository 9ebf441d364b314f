import { Hono } from "hono";
import { BadRequestError, NotFoundError } from "../errors.js";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { enqueuePrefix, signUrls, tableHead, tablePageBody } from "../table/dataset-ops.js";
import type { EdgeEnv } from "../types.js";
import { datasetPrefix } from "./dataset-prefix.js";
import { intQuery } from "./manifest.js";

const ROUTE = "/v1/datasets/";
/** The actions of this module, by the path's tail after `{prefix}`; anything else is the manifest route's. */
const TAIL = /^(.+)\/(table|table\/pages\/([^/]+)|urls|index)$/;

function match(c: {
  req: { url: string };
}): { prefix: string; action: string; page: string | undefined; origin: string } | undefined {
  const url = new URL(c.req.url);
  const m = TAIL.exec(url.pathname.slice(ROUTE.length));
  if (!m) return undefined;
  return {
    prefix: datasetPrefix(m[1]!),
    action: m[2]!.startsWith("table/pages/") ? "page" : m[2]!,
    page: m[3],
    origin: url.origin,
  };
}

/**
 * The dataset table and what planning from it needs (bearer token):
 * `GET {prefix}/table[?generation=G]` the signed head, `GET {prefix}/table/pages/{name}` a page
 * (gzip), `POST {prefix}/urls` signed URLs of listed objects, `POST {prefix}/index[?cursor]`
 * enqueue one listing page for background indexing.
 */
export const tableRoute = new Hono<EdgeEnv>()
  .get("/*", async (c, next) => {
    const m = match(c);
    if (!m || (m.action !== "table" && m.action !== "page")) return next();
    await bearerAuth()(c, async () => {});
    if (m.action === "table")
      return c.json(await tableHead(c.env, m.prefix, intQuery("generation", c.req.query("generation"))), 200, {
        "Cache-Control": "no-store",
      });
    const body = await tablePageBody(c.env, m.prefix, m.page!);
    if (!body) throw new NotFoundError(`No table page ${JSON.stringify(m.page)}`);
    return new Response(body, {
      headers: {
        // Columns (page format 2), or JSON in a generation written before them: page-codec.ts.
        "Content-Type": "application/octet-stream",
        "Content-Encoding": "gzip",
        "Cache-Control": "private, max-age=31536000, immutable",
      },
      encodeBody: "manual",
    });
  })
  .post("/*", async (c, next) => {
    const m = match(c);
    if (!m || (m.action !== "urls" && m.action !== "index")) return next();
    await bearerAuth()(c, async () => {});
    if (m.action === "index")
      return c.json(await enqueuePrefix(c.env, { prefix: m.prefix, cursor: c.req.query("cursor") }), 202);
    const body = await c.req.json().catch((cause: unknown) => {
      throw new BadRequestError("Expected a JSON body but received something else", { cause });
    });
    return c.json(await signUrls(c.env, { prefix: m.prefix, edge: m.origin, body }), 200, {
      "Cache-Control": "no-store",
    });
  });
