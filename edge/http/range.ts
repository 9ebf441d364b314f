/**
 * `Range` header parsing per RFC 9110 §14. Only single byte ranges are served; what the edge
 * does with everything else is decided here, in one place:
 *
 * - no header, a unit other than `bytes`, or a malformed header → `ignore` (full 200; §14.2
 *   lets a server ignore a Range it does not understand);
 * - more than one range → `ignore` too (ec never needs multipart/byteranges, and a 200 is
 *   always a correct answer to a Range request);
 * - a 0-byte object with a non-zero suffix range (`bytes=-n`) → `ignore`: §14.1.3 calls it
 *   satisfiable but no Content-Range can describe an empty span, so the empty 200 is the answer;
 * - a syntactically valid single range that selects no byte → `unsatisfiable` (416).
 */

/** What to do with a request's Range header for an object of a known size. */
export type RangeDecision =
  | { readonly kind: "ignore" }
  | { readonly kind: "unsatisfiable" }
  /** `start` and `end` are inclusive byte positions, as in Content-Range. */
  | { readonly kind: "partial"; readonly start: number; readonly end: number };

const IGNORE: RangeDecision = { kind: "ignore" };
const UNSATISFIABLE: RangeDecision = { kind: "unsatisfiable" };
const INT_RANGE = /^(\d+)-(\d*)$/;
const SUFFIX_RANGE = /^-(\d+)$/;

/**
 * Decides how to answer `header` for an object of `size` bytes.
 *
 * @example
 * parseRange("bytes=0-99", 1000); // { kind: "partial", start: 0, end: 99 }
 * parseRange("bytes=-10", 1000); // { kind: "partial", start: 990, end: 999 }
 * parseRange("bytes=5000-", 1000); // { kind: "unsatisfiable" }
 */
export function parseRange(header: string | null | undefined, size: number): RangeDecision {
  if (header == null) return IGNORE;
  const eq = header.indexOf("=");
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== "bytes") return IGNORE;
  // A list may hold empty elements and optional whitespace around commas (RFC 9110 §5.6.1).
  const specs = header
    .slice(eq + 1)
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (specs.length !== 1) return IGNORE;
  const spec = specs[0]!;

  const suffix = SUFFIX_RANGE.exec(spec);
  if (suffix) {
    const length = Number(suffix[1]);
    if (length === 0) return UNSATISFIABLE;
    if (size === 0) return IGNORE;
    return { kind: "partial", start: Math.max(0, size - length), end: size - 1 };
  }

  const range = INT_RANGE.exec(spec);
  if (!range) return IGNORE;
  const first = Number(range[1]);
  const last = range[2] === "" ? Infinity : Number(range[2]);
  if (last < first) return IGNORE; // an invalid range-spec makes the whole header invalid
  if (first >= size) return UNSATISFIABLE;
  return { kind: "partial", start: first, end: Math.min(last, size - 1) };
}

/**
 * The Content-Range value of a partial response.
 *
 * @example
 * contentRange(0, 99, 1000); // "bytes 0-99/1000"
 */
export function contentRange(start: number, end: number, size: number): string {
  return `bytes ${start}-${end}/${size}`;
}
