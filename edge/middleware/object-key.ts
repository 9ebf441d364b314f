import type { MiddlewareHandler } from "hono";
import { keyProblem } from "../../common/keys.js";
import { InvalidKeyError } from "../errors.js";
import type { EdgeEnv } from "../types.js";

export interface ObjectKeyOptions {
  /** The path prefix the key follows, e.g. "/v1/objects/". */
  readonly route: string;
}

/**
 * Takes the object key from the raw path after `route` (each segment percent-decoded),
 * validates it with common/keys.ts and stores it as `c.var.key`; 400 otherwise.
 *
 * @example
 * app.get("/v1/objects/*", objectKey({ route: "/v1/objects/" }), (c) => c.text(c.var.key));
 */
export function objectKey(opts: ObjectKeyOptions): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const path = new URL(c.req.url).pathname;
    const raw = path.startsWith(opts.route) ? path.slice(opts.route.length) : "";
    let key: string;
    try {
      key = decodeURIComponent(raw);
    } catch (cause) {
      throw new InvalidKeyError(`Expected a percent-encoded object key but received ${JSON.stringify(raw)}`, { cause });
    }
    const problem = keyProblem(key);
    if (problem !== undefined) throw new InvalidKeyError(problem);
    c.set("key", key);
    await next();
  };
}
