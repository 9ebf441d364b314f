/**
 * Conditional requests per RFC 9110 §13: If-Match, If-None-Match, If-Modified-Since and
 * If-Unmodified-Since, evaluated in the order of §13.2.2 (If-Range belongs to the range rules in
 * common/byte-range.ts).
 */

import { matchesStrong, matchesWeak } from "../../common/entity-tags.js";

export { matchesStrong };

/** The validators of the selected representation. */
export interface Validators {
  /** The quoted entity tag, e.g. `"abc"` (R2's httpEtag). */
  readonly etag: string;
  readonly lastModified: Date;
}

/** What the preconditions say: go on, answer 304, or answer 412. */
export type PreconditionOutcome = "proceed" | "not-modified" | "failed";

/** HTTP dates have one-second precision; compare at that precision. */
function seconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

function parseDate(value: string): number | undefined {
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/**
 * Evaluates the preconditions of a GET or HEAD for an existing representation.
 *
 * @example
 * evaluatePreconditions(new Headers({ "if-none-match": '"x"' }), { etag: '"x"', lastModified }); // "not-modified"
 */
export function evaluatePreconditions(headers: Headers, v: Validators): PreconditionOutcome {
  const ifMatch = headers.get("if-match");
  if (ifMatch !== null) {
    if (!matchesStrong(ifMatch, v.etag)) return "failed";
  } else {
    const since = headers.get("if-unmodified-since");
    const date = since === null ? undefined : parseDate(since);
    if (date !== undefined && seconds(v.lastModified) > date) return "failed";
  }
  const ifNoneMatch = headers.get("if-none-match");
  if (ifNoneMatch !== null) {
    if (matchesWeak(ifNoneMatch, v.etag)) return "not-modified";
  } else {
    const since = headers.get("if-modified-since");
    const date = since === null ? undefined : parseDate(since);
    if (date !== undefined && seconds(v.lastModified) <= date) return "not-modified";
  }
  return "proceed";
}
