/** `POST /v1/plan`: the ranges a client reads next; replaces the rest of that client's previous plan. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ObjectIds } from "../core/object-ids.js";
import type { RangeCache } from "../range-cache.js";
import { type PlanRange, PlanRequest } from "../schema.js";
import { readJson } from "./body.js";

/** A window of ranges by object id is a few KiB; the bound keeps one body's parse short. */
const MAX_BODY = 8 << 20;

export async function handlePlan(
  cache: RangeCache,
  req: IncomingMessage,
  res: ServerResponse,
  ids: ObjectIds,
): Promise<void> {
  const { client, objects, ranges, budgetBytes } = await readJson(
    req,
    PlanRequest,
    "a plan {client?, objects?: [{id, url, etag?}], ranges: [{url, offset, length} | {object, offset, length}]}",
    MAX_BODY,
    "ERR_PLAN_TOO_LARGE",
  );
  const ack = cache.plan(ids.resolve<PlanRange>(client, objects, ranges), { client, budgetBytes });
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(ack));
}
