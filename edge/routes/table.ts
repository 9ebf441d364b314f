import { Hono } from "hono";
import { BadRequestError, NotFoundError } from "../errors.js";
import { boundedBody } from "../http/bounded-body.js";
import { bearerAuth } from "../middleware/bearer-auth.js";
import { MAX_PAGES_PER_REQUEST, PAGE_NAME } from "../../common/dataset-table/page-frames.js";
import { enqueuePrefix, signUrls, tableHead, tablePageBody, tablePagesBody } from "../table/dataset-ops.js";
import type { EdgeEnv } from "../types.js";
import { datasetPrefix } from "./dataset-prefix.js";
import { intQuery } from "./manifest.js";

const ROUTE = "/v1/datasets/";
/** The largest `POST {prefix}/urls` body: 1000 objects of the longest keys, escaped, fit in it. */
export const MAX_URLS_BODY_BYTES = 4 << 20;
/** The actions of this module, by the path's tail after `{prefix}`; anything else is the manifest route's. */
const TAIL = /^(.+)\/(table|table\/pages|table\/pins|table\/(?:pages|pins)\/([^/]+)|urls|index)$/;

function match(c: {
  req: { url: string };
}): { prefix: string; action: string; page: string | undefined; origin: string } | undefined {
  const url = new URL(c.req.url);
  const m = TAIL.exec(url.pathname.slice(ROUTE.length));
  if (!m) return undefined;
  return {
    prefix: datasetPrefix(m[1]!),
    action: m[2]!.startsWith("table/pages/")
      ? "page"
      : m[2]!.startsWith("table/pins/")
        ? "pins"
        : m[2] === "table/pages"
          ? "pages"
          : m[2] === "table/pins"
            ? "pinsMany"
            : m[2]!,
    page: m[3],
    origin: url.origin,
  };
}

/** Pages never change under a name (a new generation writes new names). */
const IMMUTABLE = "private, max-age=31536000, immutable";

/** `?names=A,B,…`: 1 to MAX_PAGES_PER_REQUEST page names. */
function pageNames(text: string | undefined): string[] {
  const names = text ? text.split(",") : [];
  const bad = names.find((n) => !PAGE_NAME.test(n));
  if (names.length === 0 || names.length > MAX_PAGES_PER_REQUEST || bad !== undefined)
    throw new BadRequestError(
      `Expected names as 1 to ${MAX_PAGES_PER_REQUEST} comma-separated page names (like 7-0) but received ${
        bad === undefined ? `${names.length} names` : JSON.stringify(bad)
      }`,
    );
  return names;
}

/**
 * The dataset table and what planning from it needs (bearer token):
 * `GET {prefix}/table[?generation=G]` the signed head, `GET {prefix}/table/pages/{name}` a page
 * (gzip), `GET {prefix}/table/pages?names=A,B,…` up to 64 of them in one body (page-frames.ts),
 * `GET {prefix}/table/pins/{name}` a page's etags where it keeps them apart (gzip, page-pins.ts),
 * `GET {prefix}/table/pins?names=A,B,…` several pages' pins in one body, framed as pages,
 * `POST {prefix}/urls` signed URLs of listed objects, `POST {prefix}/index[?cursor]`
 * enqueue one listing page for background indexing.
 */
export const tableRoute = new Hono<EdgeEnv>()
  .get("/*", async (c, next) => {
    const m = match(c);
    if (!m || !["table", "page", "pages", "pins", "pinsMany"].includes(m.action)) return next();
    await bearerAuth()(c, async () => {});
    if (m.action === "table")
      return c.json(await tableHead(c.env, m.prefix, intQuery("generation", c.req.query("generation"))), 200, {
        "Cache-Control": "no-store",
      });
    if (m.action === "pages" || m.action === "pinsMany")
      return new Response(
        await tablePagesBody(
          c.env,
          m.prefix,
          pageNames(c.req.query("names")),
          m.action === "pinsMany" ? "pins" : "page",
        ),
        { headers: { "Content-Type": "application/octet-stream", "Cache-Control": IMMUTABLE } },
      );
    const part = m.action === "pins" ? "pins" : "page";
    const body = await tablePageBody(c.env, m.prefix, m.page!, part);
    if (!body)
      throw new NotFoundError(`No table ${part === "pins" ? "pins of page" : "page"} ${JSON.stringify(m.page)}`);
    return new Response(body, {
      headers: {
        // Columns (page format 4, 3 or 2) or pins, or JSON in a generation written before them: page-codec.ts.
        "Content-Type": "application/octet-stream",
        "Content-Encoding": "gzip",
        "Cache-Control": IMMUTABLE,
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
    // 1000 keys of at most 1 KiB each and their etags: refused before buffering more.
    const bytes = await boundedBody(c.req.raw, MAX_URLS_BODY_BYTES);
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(bytes));
    } catch (cause) {
      throw new BadRequestError("Expected a JSON body but received something else", { cause });
    }
    return c.json(await signUrls(c.env, { prefix: m.prefix, edge: m.origin, body }), 200, {
      "Cache-Control": "no-store",
    });
  });
