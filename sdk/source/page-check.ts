/**
 * Node's own zlib and hash for the table pages of an open(): every page of the table is inflated
 * and digested before the first plan. libuv's thread pool (zlib's and WebCrypto's async calls)
 * queues those jobs four at a time behind each other and behind the process's other work, and
 * each async inflate allocates a 1 MiB output chunk; a synchronous call per page waits in no
 * queue and allocates only the page (figures: bench/README.md, "open()'s CPU phase by phase").
 */
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";

/** The largest output chunk a page's own trailer may ask for: a bigger page is inflated in more chunks. */
const MAX_CHUNK = 4 << 20;

/**
 * A page's gzip bytes inflated in one synchronous call (a plain Uint8Array over zlib's buffer).
 * The output chunk is sized from the gzip trailer's length (bounded; a wrong one costs chunks,
 * never bytes): one chunk and no copy where zlib's default of 16 KiB would take several.
 */
export const inflatePage = async (gz: Uint8Array): Promise<Uint8Array> => {
  const said =
    gz.byteLength >= 18 ? new DataView(gz.buffer, gz.byteOffset, gz.byteLength).getUint32(gz.byteLength - 4, true) : 0;
  const b = gunzipSync(gz, { chunkSize: Math.min(MAX_CHUNK, Math.max(1024, said + 64)) });
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
};

/** base64url SHA-256 of a page, as common/dataset-table/digest.ts's sha256 gives it, computed synchronously. */
export const pageDigest = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("base64url");
