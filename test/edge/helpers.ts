import { env, SELF } from "cloudflare:test";
import { encodeKeyPath } from "../../common/keys.js";
import { INDEX_ROUTE, OBJECTS_ROUTE, signedObjectUrl, signPath } from "../../common/sign.js";

export const BASE = "http://edge.test";
export const TOKEN = "test-token-a";
export { INDEX_ROUTE, OBJECTS_ROUTE };

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** A GET/HEAD URL for `key` signed with the test secret, valid for an hour unless `exp` says otherwise. */
export function signed(key: string, exp = nowSeconds() + 3600): Promise<string> {
  return signedObjectUrl(BASE, key, exp, env.EC_SIGNING_KEY);
}

/** The raw object path with an explicit exp and sig, for forged and malformed signatures. */
export function withSig(key: string, exp: number | string, sig: string): string {
  return `${BASE}${OBJECTS_ROUTE}${encodeKeyPath(key)}?exp=${exp}&sig=${sig}`;
}

export { signPath };

export function put(key: string, body: BodyInit | null, headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(`${BASE}${OBJECTS_ROUTE}${encodeKeyPath(key)}`, {
    method: "PUT",
    body,
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
  });
}

export async function get(key: string, headers: Record<string, string> = {}, method = "GET"): Promise<Response> {
  return SELF.fetch(await signed(key), { method, headers });
}

/** Deterministic bytes 0..n-1 of a simple pattern, so any offset error changes the content. */
export function pattern(n: number, seed = 7): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

export async function errorCode(res: Response): Promise<string> {
  const body = (await res.json()) as { error: { code: string } };
  return body.error.code;
}
