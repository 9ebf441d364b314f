import { PayloadTooLargeError } from "../errors.js";

/**
 * A request body of at most `limit` bytes, refused with 413 ERR_PAYLOAD_TOO_LARGE before more
 * is buffered: by its Content-Length where it declares one, else as soon as the stream passes
 * the limit (a chunked body declares nothing), the rest left unread.
 *
 * @example
 * const text = new TextDecoder().decode(await boundedBody(c.req.raw, MAX_SIDECAR_BYTES));
 */
export async function boundedBody(req: Request, limit: number): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw new PayloadTooLargeError(limit, Number(declared));
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new PayloadTooLargeError(limit, undefined);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
