/**
 * Node's own zlib and hash for the table pages of an open(): a table of 50,000 objects is 50
 * pages (≈ 4 MB inflated) that are inflated and digested before the first plan. libuv's thread
 * pool (zlib's and WebCrypto's async calls) queues the 50 jobs four at a time behind each other
 * and behind the process's other work, and a 1 MiB output chunk per inflate is 50 MiB to
 * allocate; one synchronous call per page takes a fraction of a millisecond (bench/README.md,
 * "open() at 50,000 objects, phase by phase").
 */
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";

/** A page's gzip bytes inflated in one synchronous call (a plain Uint8Array over zlib's buffer). */
export const inflatePage = async (gz: Uint8Array): Promise<Uint8Array> => {
  const b = gunzipSync(gz);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
};

/** base64url SHA-256 of a page, as common/dataset-table/digest.ts's sha256 gives it, computed synchronously. */
export const pageDigest = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("base64url");
