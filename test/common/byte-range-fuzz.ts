/**
 * Range headers for fuzzing a server's parsing of them (the edge, the origin-cache), and the
 * check any answer must pass whatever the header was. The inputs aim at the parser, not at the
 * disk or the wire: first positions sit on the edges that matter (0, the object's end, the
 * server's block boundaries, integers past 2^53) and spans are short, so a run is a parse and a
 * small read, not a transfer of the whole object; malformed values and lists still come, and
 * their answer (the whole object) is as small as the object the suite picks.
 */
import fc from "fast-check";
import type { RangeAnswer } from "./byte-range-cases.js";

/** Integers no double holds, and one past the largest safe one, as the digits a client would send. */
const HUGE = ["9007199254740991", "9007199254740992", "18446744073709551616", "99999999999999999999"];

/**
 * Header values for `Range` against an object of `size` bytes. `edges`: further positions the
 * server treats specially (block boundaries), each tried itself and one either side.
 *
 * @example
 * fc.asyncProperty(rangeHeader(data.length, [65536]), async (range) => check(await get({ range })));
 */
export function rangeHeader(size: number, edges: readonly number[] = []): fc.Arbitrary<string> {
  const marks = [0, size, ...edges].flatMap((e) => [e - 1, e, e + 1]).filter((e) => e >= 0);
  const first = fc.oneof(fc.constantFrom(...marks), fc.nat({ max: size + 64 }));
  const huge = fc.oneof(fc.constantFrom(...HUGE), fc.bigInt({ min: 10n ** 16n, max: 10n ** 30n }).map(String));
  // A last position a few bytes on (the answer stays small), or one past any size (clamped to the end).
  const span = fc.tuple(first, fc.oneof(fc.nat({ max: 64 }).map(String), huge));
  const last = (a: number, b: string): string => (/^\d{1,3}$/.test(b) ? String(a + Number(b)) : b);
  const one = fc.oneof(
    span.map(([a, b]) => `${a}-${last(a, b)}`),
    // Open-ended from near the end: the tail is short.
    fc.nat({ max: 64 }).map((k) => `${Math.max(0, size - k)}-`),
    fc.nat({ max: 64 }).map((k) => `-${k}`),
    huge.map((n) => `${n}-`),
    huge.map((n) => `-${n}`),
    fc.tuple(first, fc.nat({ max: 8 })).map(([a, zeros]) => `${"0".repeat(zeros)}${a}-${a}`),
    // A last position before the first.
    first.filter((a) => a > 0).map((a) => `${a}-${a - 1}`),
  );
  return fc.oneof(
    { weight: 4, arbitrary: one.map((r) => `bytes=${r}`) },
    fc.array(one, { minLength: 2, maxLength: 4 }).map((rs) => `bytes=${rs.join(",")}`),
    fc.tuple(one, fc.constantFrom("", " ", ",", ", ,", ", 0-1", "-", "x")).map(([r, tail]) => `bytes=${r}${tail}`),
    fc
      .tuple(fc.constantFrom("BYTES=", "Bytes=", "bytes =", "bytes= ", "items=", "bytes ", "bytes=0x"), one)
      .map(([unit, r]) => `${unit}${r}`),
    fc.constantFrom("bytes=", "bytes=-", "bytes=--1", "bytes=,", "bytes=1-2-3", "bytes=abc"),
    fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, "")),
  );
}

/**
 * Why `got` is not a right answer for an object of `data` whatever the Range header asked, or
 * undefined: a 206 names a range inside the object and carries exactly its bytes; a 200 the
 * whole object, without Content-Range; a 416 the object's size in `bytes *\/size`.
 */
export function wrongBytes(data: Uint8Array, got: RangeAnswer): string | undefined {
  const size = data.length;
  if (got.status === 206) {
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(got.contentRange ?? "");
    if (!m) return `206 with Content-Range ${JSON.stringify(got.contentRange)}`;
    const [start, end, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (total !== size || start > end || end >= size) return `206 for ${got.contentRange} of a ${size}-byte object`;
    if (got.contentLength !== null && got.contentLength !== String(end - start + 1))
      return `206 for ${got.contentRange} with Content-Length ${got.contentLength}`;
    if (!Buffer.from(got.body).equals(data.subarray(start, end + 1)))
      return `206 for ${got.contentRange} with ${got.body.length} other bytes`;
  } else if (got.status === 200) {
    if (got.contentRange !== null) return `200 with Content-Range ${got.contentRange}`;
    if (!Buffer.from(got.body).equals(data)) return `200 with ${got.body.length} bytes that are not the object`;
  } else if (got.status === 416) {
    if (got.contentRange !== `bytes */${size}`) return `416 with Content-Range ${JSON.stringify(got.contentRange)}`;
  }
  return undefined;
}

/**
 * Conditions beside the Range: none, or an If-Range or If-Match naming the current entity tag
 * `etag`, its weak form, another tag, a list, a date or garbage (each decides 206, 200 or 412).
 *
 * @example
 * fc.asyncProperty(rangeHeader(size), rangeConditions(etag), async (range, cond) => get({ range, ...cond }));
 */
export function rangeConditions(etag: string): fc.Arbitrary<Readonly<Record<string, string>>> {
  const tag = fc.oneof(
    fc.constantFrom(etag, `W/${etag}`, '"other"', `"other", ${etag}`, "*", "Tue, 01 Dec 2026 00:00:00 GMT"),
    fc.string({ maxLength: 20 }).map((s) => `"${s.replace(/[^\x21-\x7e]/g, "").replaceAll('"', "")}"`),
  );
  return fc.oneof(
    fc.constant({}),
    fc.tuple(fc.constantFrom("if-range", "if-match"), tag).map(([name, value]) => ({ [name]: value })),
  );
}
