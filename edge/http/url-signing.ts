/**
 * The keys and lifetimes of signed URLs. `EC_SIGNING_KEY` signs; `EC_SIGNING_KEY_PREVIOUS`
 * (comma-separated) still verifies during a rotation, each URL naming its key by `kid`. No URL is
 * signed, or accepted, for longer than `EC_URL_MAX_TTL_SECONDS` (7 days by default), so a key
 * retired after that window opens nothing.
 */
import { signingKeyId } from "../../common/sign.js";
import { InternalError } from "../errors.js";

/** The longest a signed URL may be valid when EC_URL_MAX_TTL_SECONDS does not say. */
export const DEFAULT_URL_MAX_TTL_SECONDS = 7 * 24 * 3600;
/** How long the URLs of a manifest or a /urls answer stay valid when EC_URL_TTL_SECONDS does not say. */
export const DEFAULT_TTL_SECONDS = 3600;
/** Previous keys kept verifying at once: a rotation needs one, a hurried second one two. */
const MAX_PREVIOUS_KEYS = 3;

function envSeconds(text: string | undefined, fallback: number): number {
  const n = Number(text);
  return text !== undefined && text !== "" && Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** EC_URL_MAX_TTL_SECONDS, or 7 days. */
export function maxUrlLifetime(env: Env | undefined): number {
  return envSeconds(env?.EC_URL_MAX_TTL_SECONDS, DEFAULT_URL_MAX_TTL_SECONDS);
}

/**
 * The key and expiry of URLs signed now: EC_SIGNING_KEY, and now + EC_URL_TTL_SECONDS, which must
 * not exceed EC_URL_MAX_TTL_SECONDS (a 500 that says nothing to the client, and the reason in
 * the log, otherwise: the edge signs nothing longer than it would accept).
 *
 * @example
 * const { secret, exp } = urlSigning(env, Math.floor(Date.now() / 1000));
 */
export function urlSigning(env: Env, now: number): { secret: string; exp: number } {
  const secret = env.EC_SIGNING_KEY;
  if (!secret) throw new InternalError(new Error("EC_SIGNING_KEY is not set"));
  const ttl = envSeconds(env.EC_URL_TTL_SECONDS, DEFAULT_TTL_SECONDS);
  const max = maxUrlLifetime(env);
  if (ttl > max)
    throw new InternalError(
      new Error(`EC_URL_TTL_SECONDS (${ttl}) exceeds EC_URL_MAX_TTL_SECONDS (${max}): no URL is signed for longer`),
    );
  return { secret, exp: now + ttl };
}

/**
 * The secrets that verify a URL naming `kid` (all of them for a URL without one, as signed
 * before key ids): the current key and up to three previous ones.
 *
 * @example
 * for (const secret of await verifyingKeys(env, c.req.query("kid"))) …
 */
export async function verifyingKeys(env: Env, kid: string | undefined): Promise<string[]> {
  if (!env.EC_SIGNING_KEY) throw new InternalError(new Error("EC_SIGNING_KEY is not set"));
  const previous = (env.EC_SIGNING_KEY_PREVIOUS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .slice(0, MAX_PREVIOUS_KEYS);
  const all = [env.EC_SIGNING_KEY, ...previous];
  if (kid === undefined) return all;
  const ids = await Promise.all(all.map(signingKeyId));
  return all.filter((_, i) => ids[i] === kid);
}
