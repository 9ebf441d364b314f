/**
 * A digest of a set of objects (key and etag each) that adds up over any split of the set:
 * the sum, lane by lane mod 2^32, of a 128-bit hash of each object. A table head records one
 * per page, so a client has the digest of a whole dataset from the head alone, and planning
 * from every index computes the same value object by object. It detects a different listing
 * (a plan fingerprint), not forgery: the head's Ed25519 signature does that.
 */

/** Lanes of the 128-bit sum. */
const LANES = 4;

/** cyrb128 (bryc, public domain): four 32-bit lanes over the UTF-16 units; pure JS, so workerd and Node agree. */
function hash128(s: string, out: Uint32Array): void {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < s.length; i++) {
    const k = s.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  out[0] = h1;
  out[1] = h2 ^ h1;
  out[2] = h3 ^ h1;
  out[3] = h4 ^ h1;
}

/**
 * The running digest of a set of objects; `toString()` is 32 hex digits.
 *
 * @example
 * const d = new SetDigest();
 * for (const e of entries) d.add(e.key, e.etag);
 * page.digest = d.toString();
 */
export class SetDigest {
  private readonly sum = new Uint32Array(LANES);
  private readonly one = new Uint32Array(LANES);
  /** Objects added (pages' counts included). */
  count = 0;

  add(key: string, etag: string): this {
    hash128(`${key}\u0000${etag}`, this.one);
    for (let i = 0; i < LANES; i++) this.sum[i] = this.sum[i]! + this.one[i]!;
    this.count++;
    return this;
  }

  /** Adds a part's digest (as `toString()` wrote it) of `count` objects. */
  addDigest(digest: string, count: number): this {
    if (!/^[0-9a-f]{32}$/.test(digest)) throw new RangeError(`Expected 32 hex digits but received ${digest}`);
    for (let i = 0; i < LANES; i++) this.sum[i] = this.sum[i]! + Number.parseInt(digest.slice(i * 8, i * 8 + 8), 16);
    this.count += count;
    return this;
  }

  toString(): string {
    return [...this.sum].map((x) => x.toString(16).padStart(8, "0")).join("");
  }
}
