/**
 * Byte ranges per RFC 9110 §14, the one reading shared by the edge, the origin-cache and the
 * cache's upstream checks, so every hop answers a `Range` alike. Only single byte ranges are
 * served; what happens to everything else is decided here:
 *
 * - the grammar is §14.1.2's, exactly: `range-unit "=" range-set`, the unit compared
 *   case-insensitively (`BYTES=0-9` is a byte range), no whitespace around `=` (`bytes = 0-9` is
 *   malformed), optional whitespace and empty elements only around the commas of the list
 *   (§5.6.1.2: `bytes=0-9, ` is one range, `bytes= 0-9` is malformed);
 * - no header, a unit other than `bytes`, or a malformed header → `ignore` (full 200; §14.2
 *   lets a server ignore a Range it does not understand);
 * - more than one range → `ignore` too (ec never needs multipart/byteranges, and a 200 is
 *   always a correct answer to a Range request);
 * - a 0-byte object with a non-zero suffix range (`bytes=-n`) → `ignore`: §14.1.1 calls it
 *   satisfiable but no Content-Range can describe an empty span, so the empty 200 is the answer;
 * - a valid single range that selects no byte → `unsatisfiable` (416, `Content-Range: bytes *\/size`).
 */

import { isEntityTag, sameStrong } from "./entity-tags.js";

/** What to do with a request's Range header for an object of a known size. */
export type RangeDecision =
  | { readonly kind: "ignore" }
  | { readonly kind: "unsatisfiable" }
  /** `start` and `end` are inclusive byte positions, as in Content-Range. */
  | { readonly kind: "partial"; readonly start: number; readonly end: number };

const IGNORE: RangeDecision = { kind: "ignore" };
const UNSATISFIABLE: RangeDecision = { kind: "unsatisfiable" };
/** `token` (§5.6.2): what a range unit may be spelled with. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INT_RANGE = /^(\d+)-(\d*)$/;
const SUFFIX_RANGE = /^-(\d+)$/;
const CONTENT_RANGE = /^bytes (?:(\d+)-(\d+)|\*)\/(\d+|\*)$/;

type Spec = { readonly first: number; readonly last: number } | { readonly suffix: number };

function rangeSpec(spec: string): Spec | undefined {
  const suffix = SUFFIX_RANGE.exec(spec);
  if (suffix) return { suffix: Number(suffix[1]) };
  const range = INT_RANGE.exec(spec);
  if (!range) return undefined;
  const first = Number(range[1]);
  const last = range[2] === "" ? Infinity : Number(range[2]);
  // An int-range whose last position comes before its first is invalid (§14.1.1).
  return last < first ? undefined : { first, last };
}

/**
 * Decides how to answer `header` for an object of `size` bytes.
 *
 * @example
 * parseRange("bytes=0-99", 1000); // { kind: "partial", start: 0, end: 99 }
 * parseRange("bytes=-10", 1000); // { kind: "partial", start: 990, end: 999 }
 * parseRange("bytes=5000-", 1000); // { kind: "unsatisfiable" }
 * parseRange("bytes = 0-9", 1000); // { kind: "ignore" }
 */
export function parseRange(header: string | null | undefined, size: number): RangeDecision {
  if (header == null) return IGNORE;
  // A field value carries no leading or trailing whitespace (§5.5); inside it the grammar rules.
  const value = header.trim();
  const eq = value.indexOf("=");
  if (eq < 0) return IGNORE;
  const unit = value.slice(0, eq);
  if (!TOKEN.test(unit) || unit.toLowerCase() !== "bytes") return IGNORE;
  const set = value.slice(eq + 1);
  // `1#range-spec` (§5.6.1.2): whitespace only next to a comma, so never before the first element.
  if (/^[ \t]/.test(set)) return IGNORE;
  const elements = set
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const specs = elements.map(rangeSpec);
  // One invalid range-spec makes the whole header invalid.
  if (specs.length !== 1 || specs.some((s) => s === undefined)) return IGNORE;
  const spec = specs[0]!;

  if ("suffix" in spec) {
    if (spec.suffix === 0) return UNSATISFIABLE;
    if (size === 0) return IGNORE;
    return { kind: "partial", start: Math.max(0, size - spec.suffix), end: size - 1 };
  }
  if (spec.first >= size) return UNSATISFIABLE;
  return { kind: "partial", start: spec.first, end: Math.min(spec.last, size - 1) };
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

/**
 * The Content-Range value of a 416 (§14.4): no range, the object's size.
 *
 * @example
 * unsatisfiedRange(1000); // "bytes *\/1000"
 */
export function unsatisfiedRange(size: number): string {
  return `bytes */${size}`;
}

/** A parsed Content-Range: `start`/`end` absent for `bytes *\/size`, `size` absent for `/*`. */
export interface ContentRange {
  readonly start?: number;
  readonly end?: number;
  readonly size?: number;
}

/**
 * Parses a Content-Range answer (`bytes a-b/size`, `bytes a-b/*` or `bytes *\/size`);
 * `undefined` for anything else, including a last position before the first.
 *
 * @example
 * parseContentRange("bytes 0-0/1000"); // { start: 0, end: 0, size: 1000 }
 * parseContentRange("bytes *\/1000"); // { size: 1000 }
 */
export function parseContentRange(value: string | null | undefined): ContentRange | undefined {
  if (value == null) return undefined;
  const m = CONTENT_RANGE.exec(value.trim());
  if (!m || (m[1] === undefined && m[3] === "*")) return undefined;
  const span = m[1] !== undefined ? { start: Number(m[1]), end: Number(m[2]) } : undefined;
  if (span && span.end < span.start) return undefined;
  return { ...span, ...(m[3] !== "*" ? { size: Number(m[3]) } : {}) };
}

/** What If-Range is compared with; a server that does not know Last-Modified leaves it out. */
export interface RangeValidators {
  /** The quoted entity tag, e.g. `"abc"`. */
  readonly etag: string;
  readonly lastModified?: Date;
}

/**
 * Whether a Range may be honoured under If-Range (§13.1.5): absent, or one strong entity tag
 * equal to ours, or an HTTP date equal to Last-Modified (to the second). Otherwise the full
 * representation is sent.
 *
 * @example
 * ifRangeHolds('"old"', { etag: '"new"' }); // false
 */
export function ifRangeHolds(ifRange: string | null | undefined, v: RangeValidators): boolean {
  if (ifRange == null) return true;
  if (isEntityTag(ifRange) || ifRange.trim().startsWith("W/")) return sameStrong(ifRange, v.etag);
  const ms = Date.parse(ifRange);
  if (Number.isNaN(ms) || v.lastModified === undefined) return false;
  return Math.floor(ms / 1000) === Math.floor(v.lastModified.getTime() / 1000);
}
