import type { MiddlewareHandler } from "hono";
import { verifyPath } from "../../common/sign.js";
import { InternalError, SignatureExpiredError, SignatureInvalidError } from "../errors.js";
import type { EdgeEnv } from "../types.js";

export interface SignedUrlOptions {
  /** The route prefix the signature covers (OBJECTS_ROUTE, INDEX_ROUTE of common/sign.ts). */
  readonly route: string;
  /** The HMAC secret; defaults to the `EC_SIGNING_KEY` secret. */
  readonly secret?: (env: Env) => string | undefined;
  /** Unix seconds now; a parameter so tests can move the clock. */
  readonly now?: () => number;
}

/**
 * Requires `?exp=<unix seconds>&sig=<base64url>` signing (route, `c.var.key`, exp); run it
 * after `objectKey()`. Missing or forged → 403 ERR_SIGNATURE_INVALID; genuine but past its
 * expiry → 403 ERR_SIGNATURE_EXPIRED (checked after the signature, so it says nothing to forgers).
 *
 * @example
 * objects.get("/*", objectKey({ route: OBJECTS_ROUTE }), signedUrlAuth({ route: OBJECTS_ROUTE }), handler);
 */
export function signedUrlAuth(opts: SignedUrlOptions): MiddlewareHandler<EdgeEnv> {
  const source = opts.secret ?? ((env: Env) => env.EC_SIGNING_KEY);
  const now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  return async (c, next) => {
    const secret = source(c.env);
    if (!secret) throw new InternalError(new Error("EC_SIGNING_KEY is not set"));
    const expText = c.req.query("exp");
    const sig = c.req.query("sig");
    if (expText === undefined || sig === undefined)
      throw new SignatureInvalidError("The URL has no exp and sig parameters");
    if (!/^\d{1,12}$/.test(expText)) throw new SignatureInvalidError();
    const exp = Number(expText);
    if (!(await verifyPath(secret, opts.route, c.var.key, exp, sig))) throw new SignatureInvalidError();
    if (exp < now()) throw new SignatureExpiredError(exp);
    await next();
  };
}
