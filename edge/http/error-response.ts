import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { EdgeError, InternalError } from "../errors.js";

/**
 * The one error renderer (`app.onError`): an EdgeError becomes its JSON body, status and
 * headers; Hono's own HTTPExceptions keep their status; anything else is logged here and
 * becomes a 500 that says nothing about what failed.
 */
export function renderError(err: Error, c: Context): Response {
  let error: EdgeError;
  if (err instanceof EdgeError) {
    error = err;
  } else if (err instanceof HTTPException && err.status < 500) {
    error = new EdgeError("ERR_BAD_REQUEST", 400, err.message || "Bad request");
    return c.json(error.toJSON(), err.status);
  } else {
    error = new InternalError(err);
  }
  if (error instanceof InternalError) console.error("ec edge: internal error", error.cause);
  return c.json(error.toJSON(), error.status, error.headers);
}
