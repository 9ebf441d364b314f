/**
 * The `edgeKeys` option and EC_EDGE_KEYS: the edge's Ed25519 public keys pinned by the user,
 * checked for shape before any I/O (each a 32-byte key in base64url, as `ec keys URL` prints it).
 */
import { z } from "zod";
import { describeReceived } from "../../common/errors.js";

const error = (iss: { input?: unknown }) =>
  `Expected the edge's Ed25519 public keys (base64url, as \`ec keys URL\` prints them) for edgeKeys or EC_EDGE_KEYS but received ${describeReceived(iss.input)}`;

const isKey = (text: string) =>
  /^[A-Za-z0-9+/_-]{43}=?$/.test(text.trim()) && Buffer.from(text.trim(), "base64url").length === 32;

const KeyText = z.string({ error }).refine(isKey, { error });
const KeyEntry = z.object({ keyId: z.string(), alg: z.literal("Ed25519"), publicKey: KeyText }, { error });

/**
 * Pinned keys as `open()` takes them: the /v1/keys document, its `keys` list, or the bare
 * base64url public keys; several where the edge rotates its key.
 */
export const EdgeKeysSchema = z.union(
  [z.object({ keys: z.array(KeyEntry).min(1, { error }) }), z.array(z.union([KeyText, KeyEntry])).min(1, { error })],
  { error },
);
export type EdgeKeysInput = z.input<typeof EdgeKeysSchema>;

/**
 * EC_EDGE_KEYS as an option value: the JSON of /v1/keys (or of a list), else base64url keys
 * separated by commas or white space. The schema says what is wrong with it.
 *
 * @example
 * edgeKeysFromText("mZ3…,q8Y…"); // ["mZ3…", "q8Y…"]
 */
export function edgeKeysFromText(text: string): unknown {
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    try {
      return JSON.parse(t);
    } catch {
      return t;
    }
  }
  return t.split(/[\s,]+/).filter(Boolean);
}
