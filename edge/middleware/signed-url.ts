import type { MiddlewareHandler } from "hono";
import { verifyPath } from "../../common/sign.js";
import { SignatureExpiredError, SignatureInvalidError, SignatureLifetimeError } from "../errors.js";
import { maxUrlLifetime, verifyingKeys } from "../http/url-signing.js";
import type { EdgeEnv } from "../types.js";

export interface SignedUrlOptions {
  /** The route prefix the signature covers (OBJECTS_ROUTE, INDEX_ROUTE of common/sign.ts). */
  readonly route: string;
  /** The HMAC secret; defaults to `EC_SIGNING_KEY`, and `EC_SIGNING_KEY_PREVIOUS` by the URL's `kid`. */
  readonly secret?: (env: Env) => string | undefined;
  /** Unix seconds now; a parameter so tests can move the clock. */
  readonly now?: () => number;
}

/**
 * Requires `?exp=<unix seconds>[&kid=<key id>]&sig=<base64url>` signing (route, `c.var.key`, exp)
 * with the key `kid` names (any current or previous key where it names none); run it after
 * `objectKey()`. Missing or forged → 403 ERR_SIGNATURE_INVALID; genuine but past its expiry →
 * 403 ERR_SIGNATURE_EXPIRED; genuine but valid for longer than EC_URL_MAX_TTL_SECONDS from now →
 * 403 ERR_SIGNATURE_LIFETIME (both checked after the signature, so they say nothing to forgers).
 *
 * @example
 * objects.get("/*", objectKey({ route: OBJECTS_ROUTE }), signedUrlAuth({ route: OBJECTS_ROUTE }), handler);
 */
export function signedUrlAuth(opts: SignedUrlOptions): MiddlewareHandler<EdgeEnv> {
  const source = opts.secret;
  const now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  return async (c, next) => {
    const given = source?.(c.env);
    const secrets = given ? [given] : await verifyingKeys(c.env, c.req.query("kid"));
    const expText = c.req.query("exp");
    const sig = c.req.query("sig");
    if (expText === undefined || sig === undefined)
      throw new SignatureInvalidError("The URL has no exp and sig parameters");
    if (!/^\d{1,12}$/.test(expText)) throw new SignatureInvalidError();
    const exp = Number(expText);
    let genuine = false;
    for (const secret of secrets) if (!genuine) genuine = await verifyPath(secret, opts.route, c.var.key, exp, sig);
    if (!genuine) throw new SignatureInvalidError();
    const t = now();
    if (exp < t) throw new SignatureExpiredError(exp);
    const max = maxUrlLifetime(c.env);
    if (exp - t > max) throw new SignatureLifetimeError(max);
    await next();
  };
}
