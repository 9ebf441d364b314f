/**
 * Entity-tag comparison per RFC 9110 §8.8.3, shared by the edge's conditional requests and the
 * origin-cache's, so both answer If-Match / If-None-Match alike.
 */

const ENTITY_TAG = /(W\/)?"[^"]*"/g;

/** Parses `*` or a list of entity tags; anything unparsable yields an empty list. */
function entityTags(header: string): "*" | { weak: boolean; opaque: string }[] {
  if (header.trim() === "*") return "*";
  return [...header.matchAll(ENTITY_TAG)].map((m) => ({
    weak: m[1] !== undefined,
    opaque: m[0].slice(m[1]?.length ?? 0),
  }));
}

function opaque(etag: string): string {
  return etag.startsWith("W/") ? etag.slice(2) : etag;
}

/**
 * Strong comparison (§8.8.3.2): both tags strong and equal. Used by If-Match and If-Range.
 *
 * @example
 * matchesStrong('"a", "b"', '"b"'); // true
 */
export function matchesStrong(header: string, etag: string): boolean {
  const tags = entityTags(header);
  if (tags === "*") return true;
  return !etag.startsWith("W/") && tags.some((t) => !t.weak && t.opaque === etag);
}

/**
 * Weak comparison: equal opaque tags, weakness ignored. Used by If-None-Match.
 *
 * @example
 * matchesWeak('W/"a"', '"a"'); // true
 */
export function matchesWeak(header: string, etag: string): boolean {
  const tags = entityTags(header);
  if (tags === "*") return true;
  return tags.some((t) => t.opaque === opaque(etag));
}
