import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { BadRequestError, EdgeError, InternalError } from "../errors.js";

/**
 * The one error renderer (`app.onError`): an EdgeError becomes its JSON body, status and
 * headers; a 4xx HTTPException from Hono's own middleware keeps its status with the same body
 * shape; anything else is logged here and becomes a 500 that says nothing about what failed.
 *
 * @example
 * app.onError(renderError);
 */
export function renderError(err: Error, c: Context): Response {
  if (err instanceof EdgeError && !(err instanceof InternalError)) {
    return c.json(err.toJSON(), err.status, err.headers);
  }
  if (err instanceof HTTPException && err.status < 500) {
    return c.json(new BadRequestError(err.message || "Bad request").toJSON(), err.status);
  }
  const internal = err instanceof InternalError ? err : new InternalError(err);
  console.error("ec edge: internal error", internal.cause);
  return c.json(internal.toJSON(), internal.status);
}
