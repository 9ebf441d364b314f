import { Hono } from "hono";
import type { EdgeEnv } from "../types.js";

/** `GET /v1/health`: liveness only; touches no binding so it stays cheap and always answers. */
export const health = new Hono<EdgeEnv>().get("/", (c) => c.json({ ok: true }));
