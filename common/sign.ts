/**
 * Signed URLs: HMAC-SHA256 over the route, the object key and the expiry, with WebCrypto so
 * the same code signs in Node and verifies in workerd. Binding the route means a signature for
 * an object's bytes opens neither its index nor any other key.
 */
import { encodeKeyPath } from "./keys.js";

/** Route prefixes that take signed URLs; the key follows the prefix in the path. */
export const OBJECTS_ROUTE = "/v1/objects/";
export const INDEX_ROUTE = "/v1/index/";

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
    // A process only ever sees a handful of secrets; the cap guards against misuse.
    if (keyCache.size > 16) keyCache.clear();
    keyCache.set(secret, key);
  }
  return key;
}

function message(route: string, key: string, exp: number): Uint8Array<ArrayBuffer> {
  // workerd's types widen encode() to ArrayBufferLike; the buffer is a plain ArrayBuffer.
  return encoder.encode(`${route}${key}\n${exp}`) as Uint8Array<ArrayBuffer>;
}

function toBase64Url(bytes: ArrayBuffer): string {
  let bin = "";
  for (const b of new Uint8Array(bytes)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/**
 * The base64url HMAC-SHA256 signature of (route, key, exp).
 *
 * @example
 * const sig = await signPath("secret", OBJECTS_ROUTE, "a/b.mp4", 1900000000);
 */
export async function signPath(secret: string, route: string, key: string, exp: number): Promise<string> {
  return toBase64Url(await crypto.subtle.sign("HMAC", await hmacKey(secret), message(route, key, exp)));
}

/**
 * Whether `sig` signs (route, key, exp) under `secret`. The comparison is WebCrypto's own
 * `verify`, which does not leak timing; a malformed `sig` is simply false. Expiry is the
 * caller's check.
 *
 * @example
 * await verifyPath("secret", OBJECTS_ROUTE, "a/b.mp4", 1900000000, sig); // true
 */
export async function verifyPath(
  secret: string,
  route: string,
  key: string,
  exp: number,
  sig: string,
): Promise<boolean> {
  const bytes = fromBase64Url(sig);
  if (bytes?.byteLength !== 32) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, message(route, key, exp));
}

const keyIds = new Map<string, Promise<string>>();

/**
 * The key id (`kid`) a signed URL names its key by: 8 base64url characters of a SHA-256 of the
 * secret, so the edge picks the one key (of the current and the previous ones) that verifies it.
 * It tells no more of the secret than a signature does.
 *
 * @example
 * await signingKeyId("secret"); // "T3bW…" (8 characters)
 */
export function signingKeyId(secret: string): Promise<string> {
  let id = keyIds.get(secret);
  if (!id) {
    id = crypto.subtle
      .digest("SHA-256", encoder.encode(`ec-url-kid\n${secret}`))
      .then((d) => toBase64Url(d).slice(0, 8));
    if (keyIds.size > 16) keyIds.clear();
    keyIds.set(secret, id);
  }
  return id;
}

/**
 * A full signed URL `edgeBase + route + encoded key + ?exp=…&kid=…&sig=…`.
 *
 * @example
 * await signedUrl("http://127.0.0.1:8787", INDEX_ROUTE, "a/b.mp4", 1900000000, "secret");
 */
export async function signedUrl(
  edgeBase: string,
  route: string,
  key: string,
  exp: number,
  secret: string,
): Promise<string> {
  const [sig, kid] = await Promise.all([signPath(secret, route, key, exp), signingKeyId(secret)]);
  return `${edgeBase.replace(/\/+$/, "")}${route}${encodeKeyPath(key)}?exp=${exp}&kid=${kid}&sig=${sig}`;
}

/**
 * A signed GET/HEAD URL of an object's bytes.
 *
 * @example
 * const url = await signedObjectUrl("http://127.0.0.1:8787", "a/b.mp4", Math.floor(Date.now() / 1000) + 3600, secret);
 */
export function signedObjectUrl(edgeBase: string, key: string, exp: number, secret: string): Promise<string> {
  return signedUrl(edgeBase, OBJECTS_ROUTE, key, exp, secret);
}
