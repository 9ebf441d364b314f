/**
 * A table page's bytes to its entries at open: zod's checks cost as much as JSON.parse per
 * entry (bench/open-cpu.ts), and a dataset of millions of objects has millions of entries. The
 * common case, an entry with exactly TablePageV1's fields and values it accepts, is checked
 * here in one pass and taken as parsed; anything else (an error record, a field this client does
 * not know, a bad value) goes through TablePageV1 itself, which strips or reports as before.
 */
import { MediaKind, TablePageV1, TableEntryV1, VideoCodec } from "../schema/index.js";

const FIELDS = new Set(Object.keys(TableEntryV1.shape));
const KINDS = new Set<unknown>(MediaKind.options);
const CODECS = new Set<unknown>(VideoCodec.options);

const count = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0;
const positive = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) > 0;

/** Whether `e` is a TableEntryV1 that TableEntryV1.parse would return unchanged (no error record). */
function plainEntry(e: unknown): e is TableEntryV1 {
  if (typeof e !== "object" || e === null || Array.isArray(e)) return false;
  const o = e as Record<string, unknown>;
  for (const k in o) if (!FIELDS.has(k) || o[k] === undefined) return false;
  if (typeof o.key !== "string" || typeof o.etag !== "string" || !count(o.size) || !KINDS.has(o.kind)) return false;
  if (o.error !== undefined) return false;
  if (o.frames !== undefined && !count(o.frames)) return false;
  if (o.codec !== undefined && !CODECS.has(o.codec)) return false;
  if (o.width !== undefined && !positive(o.width)) return false;
  if (o.height !== undefined && !positive(o.height)) return false;
  const kf = o.keyframes;
  if (kf !== undefined) {
    if (!Array.isArray(kf)) return false;
    for (let i = 0; i < kf.length; i++) if (!count(kf[i])) return false;
  }
  return true;
}

/**
 * Parses a page's JSON text as TablePageV1: the same value (or the same ZodError) as
 * `TablePageV1.parse(JSON.parse(text))`, without zod's per-entry cost in the common case.
 *
 * @example
 * const { entries } = decodePage(new TextDecoder().decode(bytes));
 */
export function decodePage(text: string): TablePageV1 {
  const raw: unknown = JSON.parse(text);
  if (typeof raw === "object" && raw !== null) {
    const p = raw as Record<string, unknown>;
    if (
      p.version === 1 &&
      typeof p.root === "string" &&
      Array.isArray(p.entries) &&
      Object.keys(p).length === 3 &&
      p.entries.every(plainEntry)
    )
      return p as TablePageV1;
  }
  return TablePageV1.parse(raw);
}
