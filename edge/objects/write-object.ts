import { BadRequestError, LengthRequiredError, PayloadTooLargeError } from "../errors.js";

/** The largest single R2 put (4.995 GiB); larger objects go through the S3 multipart API. */
export const MAX_PUT_BYTES = 5 * 1024 ** 3 - 5 * 1024 ** 2;

export interface WriteObjectArgs {
  readonly key: string;
  readonly body: ReadableStream<Uint8Array> | null;
  /** The raw Content-Length header; R2 needs the length before the first byte. */
  readonly contentLength: string | undefined;
  readonly contentType: string | undefined;
}

/** What a PUT answers with (201). */
export interface WrittenObject {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

/**
 * Streams a request body into R2 without buffering it. The body goes through a
 * FixedLengthStream, so a body shorter or longer than its Content-Length is refused (400)
 * instead of being stored truncated.
 *
 * @example
 * await writeObject(env, { key: "a.mp4", body: req.body, contentLength: "1024", contentType: "video/mp4" });
 */
export async function writeObject(env: Env, args: WriteObjectArgs): Promise<WrittenObject> {
  if (args.contentLength === undefined) throw new LengthRequiredError();
  if (!/^\d{1,16}$/.test(args.contentLength)) {
    throw new BadRequestError(`Expected a non-negative integer Content-Length but received ${JSON.stringify(args.contentLength)}`);
  }
  const length = Number(args.contentLength);
  if (length > MAX_PUT_BYTES) throw new PayloadTooLargeError(MAX_PUT_BYTES, length);
  const httpMetadata = args.contentType ? { contentType: args.contentType } : undefined;

  let stored: R2Object;
  if (length === 0 || args.body === null) {
    if (length !== 0) throw new BadRequestError(`Expected a body of ${length} bytes but received none`);
    stored = await env.BUCKET.put(args.key, new Uint8Array(0), { httpMetadata });
  } else {
    const fixed = new FixedLengthStream(length);
    const pump = args.body.pipeTo(fixed.writable);
    try {
      [stored] = await Promise.all([env.BUCKET.put(args.key, fixed.readable, { httpMetadata }), pump]);
    } catch (cause) {
      throw new BadRequestError(`The body did not match its Content-Length of ${length} bytes`, { cause });
    }
  }
  return { key: args.key, size: stored.size, etag: stored.httpEtag };
}
