/**
 * Several table pages in one response (`GET {prefix}/table/pages?names=A,B,…`): each page as
 * it is stored (its gzip bytes), preceded by its length as a 4-byte big-endian integer, in the
 * order the names were asked. A client opening a table of N pages makes ⌈N / 64⌉ requests for
 * the same bytes instead of N, and still checks each page against the digest its signed head
 * names.
 */

/** Pages one request may name: few requests for a table of any size, each answer a bounded body (≤ 2000 entries a page). */
export const MAX_PAGES_PER_REQUEST = 64;

/** A page name as the publisher writes them: `{generation}-{n}`. */
export const PAGE_NAME = /^[0-9]{1,16}-[0-9]{1,16}$/;

/** Bytes of the length before each page. */
export const FRAME_HEADER = 4;

/** The header of one frame: `length` as 4 bytes, big-endian. */
export function frameHeader(length: number): Uint8Array {
  const header = new Uint8Array(FRAME_HEADER);
  new DataView(header.buffer).setUint32(0, length);
  return header;
}

/**
 * The pages of a response body, as many as were asked for (views into `body`). A body that is
 * cut short, longer, or holds another number of pages throws RangeError ("Expected … but
 * received …"), never fewer pages.
 *
 * @example
 * const [a, b] = splitFrames(body, 2); // each still gzip
 */
export function splitFrames(body: Uint8Array, count: number): Uint8Array[] {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const pages: Uint8Array[] = [];
  let at = 0;
  while (at < body.byteLength) {
    if (at + FRAME_HEADER > body.byteLength)
      throw new RangeError(
        `Expected a ${FRAME_HEADER}-byte page length at byte ${at} but received the end of the body`,
      );
    const length = view.getUint32(at);
    at += FRAME_HEADER;
    if (at + length > body.byteLength)
      throw new RangeError(
        `Expected ${length} bytes of page ${pages.length} but received ${body.byteLength - at} before the end`,
      );
    pages.push(body.subarray(at, at + length));
    at += length;
  }
  if (pages.length !== count) throw new RangeError(`Expected ${count} pages but received ${pages.length}`);
  return pages;
}
