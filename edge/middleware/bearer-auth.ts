import type { MiddlewareHandler } from "hono";
import { UnauthorizedError } from "../errors.js";
import type { EdgeEnv } from "../types.js";

export interface BearerAuthOptions {
  /** Comma-separated accepted tokens; defaults to the `EC_API_TOKENS` secret. */
  readonly tokens?: (env: Env) => string | undefined;
}

const encoder = new TextEncoder();

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** Compares fixed-length digests without an early exit, so timing says nothing about a token. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ (b[i] ?? 0);
  return diff === 0;
}

/**
 * Requires `Authorization: Bearer <token>` with one of the accepted tokens; 401 otherwise.
 * With no tokens configured nobody gets in (a deployment without the secret stays closed).
 *
 * @example
 * objects.put("/*", bearerAuth(), handler);
 */
export function bearerAuth(opts: BearerAuthOptions = {}): MiddlewareHandler<EdgeEnv> {
  const source = opts.tokens ?? ((env: Env) => env.EC_API_TOKENS);
  return async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (!match) throw new UnauthorizedError();
    const accepted = (source(c.env) ?? "")
      .split(",")
      .map((t) => t.trim())
      .filter((t) => t.length > 0);
    const given = await digest(match[1]!);
    let ok = false;
    for (const token of accepted) ok = sameBytes(given, await digest(token)) || ok;
    if (!ok) throw new UnauthorizedError("The bearer token is not valid");
    await next();
  };
}
