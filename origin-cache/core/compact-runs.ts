/**
 * The compact form of a batched locate's answer (`"form": "compact"`): a batch's runs mostly lie
 * in a few slab files, so the answer names each path once and its runs refer to it by number.
 */
import type { LocateCompactSpan, LocatedSpan } from "../../common/schema/cache-locate.js";

export function compactAnswer<T extends { readonly spans: readonly (LocatedSpan | null)[] }>(
  answer: T,
): Omit<T, "spans"> & { paths: string[]; spans: (LocateCompactSpan | null)[] } {
  const paths: string[] = [];
  const index = new Map<string, number>();
  const spans = answer.spans.map((s): LocateCompactSpan | null => {
    if (!s) return null;
    const runs: number[] = [];
    for (const r of s.runs) {
      let p = index.get(r.path);
      if (p === undefined) {
        p = paths.push(r.path) - 1;
        index.set(r.path, p);
      }
      runs.push(p, r.offset, r.length);
    }
    return { etag: s.etag, size: s.size, runs };
  });
  return { ...answer, paths, spans };
}
