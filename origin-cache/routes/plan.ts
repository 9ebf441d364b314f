/** `POST /v1/plan`: the ranges a client reads next; replaces the rest of that client's previous plan. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { CacheArgumentError, CacheError } from "../errors.js";
import type { RangeCache } from "../range-cache.js";
import { PlanRequest } from "../schema.js";

const MAX_BODY = 64 << 20;

export async function handlePlan(cache: RangeCache, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new CacheError("ERR_PLAN_TOO_LARGE", `Expected a plan body of at most ${MAX_BODY} bytes but received more`, 413);
    chunks.push(chunk);
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (cause) {
    throw new CacheArgumentError("Expected a JSON plan body but received invalid JSON", { cause });
  }
  const parsed = PlanRequest.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CacheArgumentError(`Expected a plan {client?, ranges: [{url, offset, length}]} but ${issue ? `${issue.path.join(".") || "body"}: ${issue.message}` : "received something else"}`);
  }
  const { client, ranges, budgetBytes } = parsed.data;
  const ack = cache.plan(ranges, { client, budgetBytes });
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(ack));
}
