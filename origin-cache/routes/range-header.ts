/**
 * The `Range` header as the edge reads it (RFC 9110 §14): one byte range is honoured, anything
 * the server may ignore (several ranges, other units, bad syntax) means the whole object.
 */
export type RangeRequest = { kind: "whole" } | { kind: "range"; start: number; end: number } | { kind: "unsatisfiable" };

export function parseRangeHeader(header: string | undefined, size: number): RangeRequest {
  if (!header) return { kind: "whole" };
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return { kind: "whole" };
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "range", start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? Infinity : Number(m[2]);
  // A last position before the first makes the header invalid, which means: ignore it.
  if (end < start) return { kind: "whole" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "range", start, end: Math.min(end, size - 1) };
}
