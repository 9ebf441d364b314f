/** Wire shapes of the cache's local API, defined once; the SDK imports them from origin-cache/index.ts. */
import { z } from "zod";
import { ObjectId, ObjectRef } from "../common/schema/object-ids.js";

export const PlanRange = z.object({
  url: z.string().min(1),
  offset: z.number().int().nonnegative(),
  length: z.number().int().positive(),
});
export type PlanRange = z.infer<typeof PlanRange>;

/** A range of an object named by its id (common/schema/object-ids.ts) instead of its URL. */
export const PlanRangeById = PlanRange.omit({ url: true }).extend({ object: ObjectId });
export type PlanRangeById = z.infer<typeof PlanRangeById>;

/** The client of a plan that names none: callers from before plans were per client share this one. */
export const ANONYMOUS_CLIENT = "anonymous";

export const PlanRequest = z.object({
  /** Whose plan: a new plan replaces only this client's; stable per open dataset (host, pid, rank). */
  client: z.string().min(1).max(256).default(ANONYMOUS_CLIENT),
  ranges: z.array(z.union([PlanRange, PlanRangeById])).max(1_000_000),
  /** Objects registered (or refreshed) under the client's ids before its ranges are read. */
  objects: z.array(ObjectRef).max(1_000_000).optional(),
  /** Overrides the cache's prefetch budget for this plan (still capped by it). */
  budgetBytes: z.number().int().positive().optional(),
});
export type PlanRequest = z.infer<typeof PlanRequest>;

export const PlanAck = z.object({ ranges: z.number().int(), blocks: z.number().int(), budgetBytes: z.number().int() });
export type PlanAck = z.infer<typeof PlanAck>;

/** The stats of GET /v1/stats: defined in common/ with the other wire shapes the SDK reads of the cache. */
export { CacheStats } from "../common/schema/cache-stats.js";
