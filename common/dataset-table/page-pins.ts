/**
 * A table page's pins: the etag of each of its entries, stored apart from the page (format 3,
 * `etagForm: "apart"`), so that open() reads only what planning needs and a read fetches the
 * pins of its object's page ahead of its first clip. The head's page ref names their SHA-256
 * (`pins`), signed with the rest. "ECTP", u32 version, u32 count, u32 form (0: every etag a
 * quoted MD5, stored as its 16 bytes; 1: UTF-8, u32 lengths first), then the etags.
 */
import type { TableEntryV1 } from "../schema/index.js";
import { decodePageBytes } from "./page-codec.js";
import { TablePageFormatError } from "./page-errors.js";

export const PINS_FORMAT_VERSION = 1;
const MAGIC = [0x45, 0x43, 0x54, 0x50]; // "ECTP"
const PREAMBLE = 16;
const MD5_ETAG = /^"[0-9a-f]{32}"$/;
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));
/** Etags written out kept per page (a power of two): the objects of a prefetch window, not the page's thousand. */
const MEMO = 64;

/** The etags of one page, in entry order. */
export interface PagePins {
  readonly length: number;
  etag(i: number): string;
}

/**
 * The pins of a page's entries, as stored (before gzip; the head's `pins` digest covers these bytes).
 *
 * @example
 * const bytes = encodePins(entries.map((e) => e.etag));
 */
export function encodePins(etags: readonly string[]): Uint8Array {
  const md5 = etags.every((e) => MD5_ETAG.test(e));
  const text = md5 ? [] : etags.map((e) => new TextEncoder().encode(e));
  const body = md5 ? 16 * etags.length : 4 * etags.length + text.reduce((n, t) => n + t.byteLength, 0);
  const out = new Uint8Array(PREAMBLE + body);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  view.setUint32(4, PINS_FORMAT_VERSION, true);
  view.setUint32(8, etags.length, true);
  view.setUint32(12, md5 ? 0 : 1, true);
  if (md5) {
    etags.forEach((e, i) => {
      for (let j = 0; j < 16; j++) out[PREAMBLE + 16 * i + j] = Number.parseInt(e.slice(1 + 2 * j, 3 + 2 * j), 16);
    });
    return out;
  }
  let at = PREAMBLE + 4 * etags.length;
  text.forEach((t, i) => {
    view.setUint32(PREAMBLE + 4 * i, t.byteLength, true);
    out.set(t, at);
    at += t.byteLength;
  });
  return out;
}

/**
 * A page's pins from their bytes, checked to hold `count` etags (the page's entries).
 *
 * @example
 * decodePins(bytes, ref.count).etag(0); // '"9e1f…"'
 */
export function decodePins(bytes: Uint8Array, count: number): PagePins {
  if (bytes.byteLength < PREAMBLE || MAGIC.some((b, i) => bytes[i] !== b))
    throw new TablePageFormatError("Expected a table page's pins (ECTP) but received other bytes");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(4, true);
  if (version !== PINS_FORMAT_VERSION)
    throw new TablePageFormatError(
      `Expected table pins format ${PINS_FORMAT_VERSION} but received format ${version} (written by a newer edge: update ec)`,
    );
  const n = view.getUint32(8, true);
  const form = view.getUint32(12, true);
  if (n !== count) throw new TablePageFormatError(`Expected pins for ${count} entries but received ${n}`);
  if (form === 0) {
    if (bytes.byteLength !== PREAMBLE + 16 * n)
      throw new TablePageFormatError(
        `Expected ${PREAMBLE + 16 * n} bytes of MD5 pins but received ${bytes.byteLength}`,
      );
    const md5 = bytes.subarray(PREAMBLE);
    // An etag written out is kept for the next ask (a read asks for its object's on every read),
    // in one of MEMO slots by entry: a page's strings stay few whatever its entry count.
    const memoOf = new Int32Array(MEMO).fill(-1);
    const memo: string[] = new Array(MEMO);
    return {
      length: n,
      etag(i) {
        const slot = i & (MEMO - 1);
        if (memoOf[slot] === i) return memo[slot]!;
        const hex: string[] = new Array(16);
        for (let j = 0; j < 16; j++) hex[j] = HEX[md5[16 * i + j]!]!;
        memoOf[slot] = i;
        return (memo[slot] = `"${hex.join("")}"`);
      },
    };
  }
  if (form !== 1) throw new TablePageFormatError(`Expected pins form 0 (MD5) or 1 (text) but received ${form}`);
  const starts = new Uint32Array(n + 1);
  let at = PREAMBLE + 4 * n;
  for (let i = 0; i < n && at <= bytes.byteLength; i++) {
    starts[i] = at;
    at += view.getUint32(PREAMBLE + 4 * i, true);
  }
  starts[n] = at;
  if (at !== bytes.byteLength)
    throw new TablePageFormatError(`Expected pin lengths that add up to ${bytes.byteLength} bytes but they do not`);
  const decoder = new TextDecoder();
  return { length: n, etag: (i) => decoder.decode(bytes.subarray(starts[i], starts[i + 1])) };
}

/**
 * A page's entries with their etags: from the page where it holds them, else from its pins
 * (the publisher's merge, tools): every entry as the page was built from.
 *
 * @example
 * const entries = pageEntries(pageBytes, ref.pins === undefined ? undefined : pinsBytes);
 */
export function pageEntries(page: Uint8Array, pins: Uint8Array | undefined): TableEntryV1[] {
  const { entries } = decodePageBytes(page);
  if (!entries.apart) return entries.entries();
  if (pins === undefined)
    throw new TablePageFormatError("Expected the pins of a page that keeps its etags apart but received none");
  const etags = decodePins(pins, entries.length);
  return entries.withPins({ etag: (i) => etags.etag(i), ready: async () => {} }).entries();
}
