import { contentRange, ifRangeHolds, parseRange } from "../../common/byte-range.js";
import { evaluatePreconditions, type Validators } from "../http/conditional.js";
import { NotFoundError, ObjectChangingError, PreconditionFailedError, RangeNotSatisfiableError } from "../errors.js";

export interface ReadObjectArgs {
  readonly key: string;
  /** The request headers: Range, If-Range, If-Match, If-None-Match, If-(Un)Modified-Since. */
  readonly headers: Headers;
  /** HEAD: the same headers as GET, no body, and Range ignored (RFC 9110 §14.2). */
  readonly head: boolean;
}

// The object can be replaced between head() and get(); get() is pinned to the etag head() saw,
// so a changed object means a retry, never a body that does not match the headers.
const ATTEMPTS = 3;

function baseHeaders(meta: R2Object): Headers {
  const v = validators(meta);
  return new Headers({
    "Accept-Ranges": "bytes",
    ETag: v.etag,
    "Last-Modified": v.lastModified.toUTCString(),
    "Content-Type": meta.httpMetadata?.contentType ?? "application/octet-stream",
    // Byte-exact bodies: no-transform keeps proxies and Cloudflare's compression away, and an
    // explicit identity coding stops compressors that ignore it (wrangler dev gzips text types).
    "Cache-Control": "private, no-transform",
    "Content-Encoding": "identity",
    // Uploaded bytes are never a page of the edge's origin: no browser guesses HTML from them.
    "X-Content-Type-Options": "nosniff",
  });
}

function validators(meta: R2Object): Validators {
  return { etag: meta.httpEtag, lastModified: meta.uploaded };
}

/**
 * Answers a GET or HEAD of one object with RFC 9110 range and conditional semantics:
 * 200, 206, 304, or throws 404/412/416/503 as EdgeErrors.
 *
 * @example
 * const res = await readObject(env, { key: "a.mp4", headers: new Headers({ range: "bytes=0-99" }), head: false });
 */
export async function readObject(env: Env, args: ReadObjectArgs): Promise<Response> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const meta = await env.BUCKET.head(args.key);
    if (meta === null) throw new NotFoundError(`No object under key ${JSON.stringify(args.key)}`);
    const headers = baseHeaders(meta);

    const outcome = evaluatePreconditions(args.headers, validators(meta));
    if (outcome === "failed") {
      throw new PreconditionFailedError(
        `The precondition failed for ${JSON.stringify(args.key)} (current ETag ${meta.httpEtag})`,
      );
    }
    if (outcome === "not-modified") {
      headers.delete("Content-Type");
      headers.delete("Content-Encoding");
      return new Response(null, { status: 304, headers });
    }

    const rangeHeader = args.headers.get("range");
    const decision =
      args.head || !ifRangeHolds(args.headers.get("if-range"), validators(meta))
        ? parseRange(null, meta.size)
        : parseRange(rangeHeader, meta.size);
    if (decision.kind === "unsatisfiable") throw new RangeNotSatisfiableError(rangeHeader ?? "", meta.size);

    let status = 200;
    let length = meta.size;
    let range: R2Range | undefined;
    if (decision.kind === "partial") {
      status = 206;
      length = decision.end - decision.start + 1;
      range = { offset: decision.start, length };
      headers.set("Content-Range", contentRange(decision.start, decision.end, meta.size));
    }
    headers.set("Content-Length", String(length));
    if (args.head) return new Response(null, { status, headers });

    const object = await env.BUCKET.get(args.key, { range, onlyIf: { etagMatches: meta.etag } });
    if (object === null || !("body" in object)) continue;
    return new Response(object.body, { status, headers });
  }
  throw new ObjectChangingError(args.key);
}
