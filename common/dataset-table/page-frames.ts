/**
 * Several table pages in one response (`GET {prefix}/table/pages?names=A,B,…`): each page as
 * it is stored (its gzip bytes), preceded by its length as a 4-byte big-endian integer, in the
 * order the names were asked. A client opening a table of N pages makes ⌈N / 64⌉ requests for
 * the same bytes instead of N, and still checks each page against the digest its signed head
 * names.
 */

/** Pages one request may name: 64 pages of ≈ 1000 objects ≈ 1.2 MB on the wire. */
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
 * The pages of a body as its chunks arrive, so that each can be checked while the rest is still
 * on the wire: `push` gives the pages a chunk completes (views where a page lies in one chunk),
 * `end` checks that the body held exactly `count` pages. A body that is cut short, longer, or
 * holds another number of pages throws RangeError ("Expected … but received …").
 *
 * @example
 * const split = new FrameSplitter(2);
 * for await (const chunk of body) for (const page of split.push(chunk)) check(page);
 * split.end();
 */
export class FrameSplitter {
  /** Bytes of the page (or length) not yet complete, and where they start in the body. */
  private rest: Uint8Array = new Uint8Array(0);
  private at = 0;
  private pages = 0;

  constructor(private readonly count: number) {}

  push(chunk: Uint8Array): Uint8Array[] {
    let buf = chunk;
    if (this.rest.byteLength > 0) {
      buf = new Uint8Array(this.rest.byteLength + chunk.byteLength);
      buf.set(this.rest);
      buf.set(chunk, this.rest.byteLength);
    }
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const out: Uint8Array[] = [];
    let i = 0;
    while (i + FRAME_HEADER <= buf.byteLength) {
      const length = view.getUint32(i);
      if (i + FRAME_HEADER + length > buf.byteLength) break;
      if (++this.pages > this.count)
        throw new RangeError(`Expected ${this.count} pages but received more at byte ${this.at + i}`);
      out.push(buf.subarray(i + FRAME_HEADER, i + FRAME_HEADER + length));
      i += FRAME_HEADER + length;
    }
    this.rest = buf.subarray(i);
    this.at += i;
    return out;
  }

  end(): void {
    const left = this.rest.byteLength;
    if (left > 0 && left < FRAME_HEADER)
      throw new RangeError(
        `Expected a ${FRAME_HEADER}-byte page length at byte ${this.at} but received the end of the body`,
      );
    if (left > 0) {
      const length = new DataView(this.rest.buffer, this.rest.byteOffset).getUint32(0);
      throw new RangeError(
        `Expected ${length} bytes of page ${this.pages} but received ${left - FRAME_HEADER} before the end`,
      );
    }
    if (this.pages !== this.count) throw new RangeError(`Expected ${this.count} pages but received ${this.pages}`);
  }
}

/**
 * The pages of a whole response body, as many as were asked for (views into `body`); throws as
 * FrameSplitter does, never gives fewer pages.
 *
 * @example
 * const [a, b] = splitFrames(body, 2); // each still gzip
 */
export function splitFrames(body: Uint8Array, count: number): Uint8Array[] {
  const split = new FrameSplitter(count);
  const pages = split.push(body);
  split.end();
  return pages;
}
