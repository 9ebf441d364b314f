import { describeReceived } from "./errors.js";

/** R2 accepts keys up to 1024 bytes of UTF-8. */
export const MAX_KEY_BYTES = 1024;

/** Keys under this prefix belong to ec itself (cached indexes and the like), never to users. */
export const RESERVED_PREFIX = "_ec/";

// C0 controls, DEL and C1 controls (Unicode's Cc): they break logs, headers and terminals.
const CONTROL = /\p{Cc}/u;

const encoder = new TextEncoder();

/**
 * Why `key` is not a valid object key, or `undefined` when it is. The text follows the
 * "Expected … but received …" form so each part can wrap it in its own typed error.
 *
 * Rules: a non-empty string of at most 1024 UTF-8 bytes; no leading `/`, no backslash, no
 * control characters, no empty, `.` or `..` segment, and nothing under `_ec/`.
 *
 * @example
 * keyProblem("gameplay/clip-001.mp4"); // undefined
 * keyProblem("a/../b"); // 'Expected an object key without "." or ".." segments but received "a/../b"'
 */
export function keyProblem(key: unknown): string | undefined {
  const expected = (what: string) => `Expected an object key ${what} but received ${describeReceived(key)}`;
  if (typeof key !== "string" || key.length === 0) return expected("as a non-empty string");
  if (encoder.encode(key).byteLength > MAX_KEY_BYTES) {
    return `Expected an object key of at most ${MAX_KEY_BYTES} UTF-8 bytes but received one of ${encoder.encode(key).byteLength} bytes`;
  }
  if (CONTROL.test(key)) return expected("without control characters");
  if (key.includes("\\")) return expected("without backslashes");
  if (key.startsWith("/")) return expected("that does not start with /");
  const segments = key.split("/");
  if (segments.some((s) => s === "." || s === "..")) return expected('without "." or ".." segments');
  if (segments.some((s) => s === "")) return expected("without empty segments (// or a trailing /)");
  if (key.startsWith(RESERVED_PREFIX)) return expected(`outside the reserved prefix ${RESERVED_PREFIX}`);
  return undefined;
}

/**
 * Whether `key` is a valid object key (see {@link keyProblem} for the rules).
 *
 * @example
 * isValidKey("videos/a.mp4"); // true
 */
export function isValidKey(key: unknown): key is string {
  return keyProblem(key) === undefined;
}

/**
 * The URL path form of a key: each segment percent-encoded, the slashes kept, so a key maps
 * to exactly one path and back (the edge decodes it with `decodeURIComponent`).
 *
 * @example
 * encodeKeyPath("my videos/a#1.mp4"); // "my%20videos/a%231.mp4"
 */
export function encodeKeyPath(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}
