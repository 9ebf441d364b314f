/** `GET /v1/stats` (JSON) and `GET /metrics` (Prometheus text). */
import type { ServerResponse } from "node:http";
import type { RangeCache } from "../range-cache.js";

export function handleStats(cache: RangeCache, res: ServerResponse): void {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(cache.stats()));
}

export async function handleMetrics(cache: RangeCache, res: ServerResponse): Promise<void> {
  const text = await cache.metrics();
  res.setHeader("content-type", "text/plain; version=0.0.4; charset=utf-8");
  res.end(text);
}
