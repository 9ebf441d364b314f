/**
 * One table of Range / If-Range / If-Match cases that the edge (in workerd) and the origin-cache
 * (over loopback HTTP/2 to its upstream) must answer alike; both suites run every row.
 * `$ETAG` in a header stands for the object's current entity tag.
 */

/** Size of the object every row but the `empty` ones reads. */
export const RANGE_OBJECT_SIZE = 10_000;

export type RangeExpectation =
  /** 206 with `Content-Range: bytes start-end/size` and exactly those bytes. */
  | { readonly status: 206; readonly start: number; readonly end: number }
  /** 200 with the whole object and no Content-Range. */
  | { readonly status: 200 }
  /** 416 with `Content-Range: bytes *\/size` and ERR_RANGE_NOT_SATISFIABLE. */
  | { readonly status: 416 }
  /** 304 without a body. */
  | { readonly status: 304 }
  /** 412: the If-Match list names no current version. */
  | { readonly status: 412 };

export interface RangeCase {
  readonly name: string;
  /** HEAD: GET's headers without a body, `Range` ignored (RFC 9110 §14.2). GET when absent. */
  readonly method?: "HEAD";
  /** `empty`: a 0-byte object; otherwise one of RANGE_OBJECT_SIZE bytes. */
  readonly object?: "empty";
  readonly headers: Readonly<Record<string, string>>;
  readonly expect: RangeExpectation;
}

const S = RANGE_OBJECT_SIZE;
const partial = (start: number, end: number): RangeExpectation => ({ status: 206, start, end });
const range = (value: string, expect: RangeExpectation, name = value): RangeCase => ({
  name,
  headers: { range: value },
  expect,
});

/** A row reading the 0-byte object. */
const empty = (name: string, value: string | undefined, expect: RangeExpectation, method?: "HEAD"): RangeCase => ({
  name,
  ...(method ? { method } : {}),
  object: "empty",
  headers: value === undefined ? {} : { range: value },
  expect,
});

/** `bytes=0-9` under one condition. */
const when = (name: string, condition: Readonly<Record<string, string>>, expect: RangeExpectation): RangeCase => ({
  name,
  headers: { range: "bytes=0-9", ...condition },
  expect,
});

/**
 * HEAD rows: range handling is defined for GET only (RFC 9110 §14.2), so a HEAD with any Range
 * gets GET's headers for the whole object (200, its full Content-Length); conditions still apply.
 */
const head = (
  value: string | undefined,
  expect: RangeExpectation,
  extra: Readonly<Record<string, string>> = {},
  name?: string,
): RangeCase => ({
  name: `HEAD, ${name ?? value ?? "no Range header"}`,
  method: "HEAD",
  headers: { ...(value === undefined ? {} : { range: value }), ...extra },
  expect,
});
const HEAD_CASES: readonly RangeCase[] = [
  head("bytes=100-199", { status: 200 }),
  head("bytes=-500", { status: 200 }),
  head(`bytes=${S}-`, { status: 200 }, {}, "an unsatisfiable range"),
  head("bytes=0-1,4-5", { status: 200 }, {}, "two ranges"),
  head(undefined, { status: 200 }),
  head("bytes=0-9", { status: 200 }, { "if-range": '"other"' }, "If-Range with another ETag"),
  head("bytes=0-9", { status: 412 }, { "if-match": '"other"' }, "If-Match naming another ETag"),
  head("bytes=0-9", { status: 304 }, { "if-none-match": "$ETAG" }, "If-None-Match with the ETag"),
  empty("HEAD, 0-byte object, bytes=0-0", "bytes=0-0", { status: 200 }, "HEAD"),
  empty("HEAD, 0-byte object, a suffix range", "bytes=-10", { status: 200 }, "HEAD"),
];

export const RANGE_CASES: readonly RangeCase[] = [
  // One byte range → 206.
  range("bytes=0-0", partial(0, 0)),
  range(`bytes=${S - 1}-${S - 1}`, partial(S - 1, S - 1)),
  range("bytes=-1", partial(S - 1, S - 1)),
  range("bytes=100-199", partial(100, 199)),
  range("bytes=9000-", partial(9000, S - 1)),
  range("bytes=0-", partial(0, S - 1)),
  range("bytes=-500", partial(S - 500, S - 1)),
  range(`bytes=-${S * 3}`, partial(0, S - 1), "a suffix longer than the object is all of it"),
  range(`bytes=9990-${S * 5}`, partial(9990, S - 1), "a last position past the end is clamped"),
  range("bytes=007-009", partial(7, 9), "leading zeros are digits"),
  range("BYTES=5-9", partial(5, 9), "the unit is case-insensitive (BYTES)"),
  range("Bytes=5-9", partial(5, 9), "the unit is case-insensitive (Bytes)"),
  range("bytes=10-19,", partial(10, 19), "an empty list element does not count"),
  range("bytes=,10-19", partial(10, 19), "a leading empty list element does not count"),
  range("bytes=10-19 , ,", partial(10, 19), "whitespace around commas is allowed"),

  // Valid, but no byte selected → 416.
  range(`bytes=${S}-`, { status: 416 }),
  range(`bytes=${S}-${S + 10}`, { status: 416 }),
  range("bytes=-0", { status: 416 }, "a zero-length suffix"),
  range("bytes=99999999999999999999-", { status: 416 }, "a first position beyond any size"),

  // Malformed, another unit, or several ranges → ignored: the whole object.
  range("bytes = 0-9", { status: 200 }, "whitespace around = is malformed"),
  range("bytes =0-9", { status: 200 }),
  range("bytes= 0-9", { status: 200 }, "whitespace before the first range is malformed"),
  range("bytes=0 - 9", { status: 200 }, "whitespace inside a range is malformed"),
  range("bytes=abc", { status: 200 }),
  range("items=0-1", { status: 200 }, "a unit other than bytes"),
  range("bytes=5-2", { status: 200 }, "a last position before the first"),
  range("bytes 0-1", { status: 200 }, "no ="),
  range("bytes=", { status: 200 }, "no range at all"),
  range("bytes=,", { status: 200 }, "only empty elements"),
  range("bytes=1-2-3", { status: 200 }),
  range("bytes=0-1,abc", { status: 200 }, "one malformed range spoils the list"),
  range("bytes=0-1,4-5", { status: 200 }, "two ranges"),
  range("bytes=-5,0-1", { status: 200 }, "a suffix and a range"),
  { name: "no Range header", headers: {}, expect: { status: 200 } },

  // A 0-byte object.
  empty("0-byte object, no Range", undefined, { status: 200 }),
  empty("0-byte object, bytes=0-0", "bytes=0-0", { status: 416 }),
  empty("0-byte object, bytes=-0", "bytes=-0", { status: 416 }),
  empty("0-byte object, a suffix range is the empty 200", "bytes=-10", { status: 200 }),

  // If-Range: one strong entity tag equal to the current one, or the whole object.
  when("If-Range with the current ETag", { "if-range": "$ETAG" }, partial(0, 9)),
  when("If-Range with another ETag", { "if-range": '"other"' }, { status: 200 }),
  when("If-Range with the weak form of the ETag", { "if-range": "W/$ETAG" }, { status: 200 }),
  when("If-Range with a list is not one tag", { "if-range": '"other", $ETAG' }, { status: 200 }),

  // If-Match: a list of tags, compared strongly.
  when("If-Match with a list naming the ETag", { "if-match": '"other", $ETAG' }, partial(0, 9)),
  when("If-Match *", { "if-match": "*" }, partial(0, 9)),
  when("If-Match naming another ETag", { "if-match": '"other"' }, { status: 412 }),
  when("If-Match with the weak form of the ETag", { "if-match": "W/$ETAG" }, { status: 412 }),

  // If-None-Match comes before any Range.
  when("If-None-Match with the ETag", { "if-none-match": '"other", $ETAG' }, { status: 304 }),
  when("If-None-Match with another ETag", { "if-none-match": '"other"' }, partial(0, 9)),

  // HEAD ignores Range; its conditions hold as GET's.
  ...HEAD_CASES,
];

/** The row's headers with `$ETAG` replaced by `etag`. */
export function caseHeaders(c: RangeCase, etag: string): Record<string, string> {
  return Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, v.replaceAll("$ETAG", etag)]));
}

/** What a server answered, in the form both suites compare with a row. */
export interface RangeAnswer {
  readonly status: number;
  readonly contentRange: string | null;
  readonly contentLength: string | null;
  readonly body: Uint8Array;
}

/** Mismatches between an answer and a row's expectation for an object of `data`; empty when it holds. */
export function checkAnswer(c: RangeCase, data: Uint8Array, got: RangeAnswer): string[] {
  const e = c.expect;
  const problems: string[] = [];
  const want = (what: string, expected: unknown, actual: unknown): void => {
    if (expected !== actual)
      problems.push(`${what}: expected ${JSON.stringify(expected)} but received ${JSON.stringify(actual)}`);
  };
  // A HEAD's body is empty; its headers are GET's (for the whole object).
  const body = (bytes: Uint8Array): string => hex(c.method === "HEAD" ? new Uint8Array(0) : bytes);
  want("status", e.status, got.status);
  if (e.status === 206) {
    want("content-range", `bytes ${e.start}-${e.end}/${data.length}`, got.contentRange);
    want("content-length", String(e.end - e.start + 1), got.contentLength);
    want("body", body(data.subarray(e.start, e.end + 1)), hex(got.body));
  } else if (e.status === 200) {
    want("content-range", null, got.contentRange);
    want("content-length", String(data.length), got.contentLength);
    want("body", body(data), hex(got.body));
  } else if (e.status === 416) {
    if (c.method === "HEAD") want("body length", 0, got.body.length);
    want("content-range", `bytes */${data.length}`, got.contentRange);
  } else if (e.status === 304) {
    want("body length", 0, got.body.length);
  }
  return problems;
}

/** A short fingerprint of bytes, so a mismatch reads in one line. */
function hex(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return `${bytes.length} bytes, fnv ${h.toString(16)}`;
}
