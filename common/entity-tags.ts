/**
 * Entity-tag comparison per RFC 9110 §8.8.3, shared by the edge's conditional requests and the
 * origin-cache's, so both answer If-Match / If-None-Match / If-Range alike.
 */

interface EntityTag {
  readonly weak: boolean;
  /** The quoted part, e.g. `"abc"`. */
  readonly opaque: string;
}

const ENTITY_TAG = /(W\/)?"[^"]*"/g;
const ONE_ENTITY_TAG = /^(W\/)?"[^"]*"$/;

/** Parses `*` or a list of entity tags; anything unparsable yields an empty list. */
function entityTags(header: string): "*" | EntityTag[] {
  if (header.trim() === "*") return "*";
  return [...header.matchAll(ENTITY_TAG)].map((m) => ({
    weak: m[1] !== undefined,
    opaque: m[0].slice(m[1]?.length ?? 0),
  }));
}

/** The opaque part of one entity tag, its weakness and quotes aside: `W/"a"`, `"a"` and `a` all give `a`. */
function opaque(etag: string): string {
  const t = etag.trim();
  const bare = t.startsWith("W/") ? t.slice(2) : t;
  return bare.length >= 2 && bare.startsWith('"') && bare.endsWith('"') ? bare.slice(1, -1) : bare;
}

function strongEqual(tag: EntityTag, etag: string): boolean {
  return !tag.weak && !etag.startsWith("W/") && tag.opaque === etag;
}

/**
 * Whether `value` is one entity tag (not a list, not a date): how If-Range tells its two forms apart.
 *
 * @example
 * isEntityTag('"abc"'); // true
 * isEntityTag("Wed, 21 Oct 2015 07:28:00 GMT"); // false
 */
export function isEntityTag(value: string): boolean {
  return ONE_ENTITY_TAG.test(value.trim());
}

/**
 * Strong comparison (§8.8.3.2) of a list (or `*`) with `etag`: some tag in it is strong and
 * equal. Used by If-Match.
 *
 * @example
 * matchesStrong('"a", "b"', '"b"'); // true
 */
export function matchesStrong(header: string, etag: string): boolean {
  const tags = entityTags(header);
  if (tags === "*") return true;
  return tags.some((t) => strongEqual(t, etag));
}

/**
 * Strong comparison of exactly one entity tag with `etag` (If-Range takes one tag, never a list).
 *
 * @example
 * sameStrong('W/"a"', '"a"'); // false
 */
export function sameStrong(value: string, etag: string): boolean {
  const v = value.trim();
  if (!isEntityTag(v)) return false;
  const weak = v.startsWith("W/");
  return strongEqual({ weak, opaque: weak ? v.slice(2) : v }, etag);
}

/**
 * Weak comparison (§8.8.3.2) of two entity tags: equal opaque tags, weakness ignored. What the
 * clients that pin an object version use: R2 and S3 send strong tags, proxies may weaken them,
 * and some S3-compatible stores leave the quotes off.
 *
 * @example
 * sameWeak('W/"a"', '"a"'); // true
 * sameWeak('"a"', '"b"'); // false
 */
export function sameWeak(a: string, b: string): boolean {
  return opaque(a) === opaque(b);
}

/**
 * Weak comparison of a list (or `*`) with `etag`: some tag in it is weakly equal. Used by If-None-Match.
 *
 * @example
 * matchesWeak('W/"a"', '"a"'); // true
 */
export function matchesWeak(header: string, etag: string): boolean {
  const tags = entityTags(header);
  if (tags === "*") return true;
  return tags.some((t) => sameWeak(t.opaque, etag));
}
