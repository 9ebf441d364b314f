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
  try {
    return await write(env, args);
  } catch (err) {
    // A refused upload is not read; cancelling says so to the sender instead of leaving it hanging.
    await args.body?.cancel().catch(() => undefined);
    throw err;
  }
}

async function write(env: Env, args: WriteObjectArgs): Promise<WrittenObject> {
  if (args.contentLength === undefined) throw new LengthRequiredError();
  if (!/^\d{1,16}$/.test(args.contentLength)) {
    throw new BadRequestError(
      `Expected a non-negative integer Content-Length but received ${JSON.stringify(args.contentLength)}`,
    );
  }
  const length = Number(args.contentLength);
  if (length > MAX_PUT_BYTES) throw new PayloadTooLargeError(MAX_PUT_BYTES, length);
  const httpMetadata = args.contentType ? { contentType: args.contentType } : undefined;

  let stored: R2Object;
  if (length === 0 || args.body === null) {
    if (length !== 0) throw new BadRequestError(`Expected a body of ${length} bytes but received none`);
    stored = await env.BUCKET.put(args.key, new Uint8Array(0), { httpMetadata });
  } else {
    stored = await streamInto(env, args.key, args.body, length, httpMetadata);
  }
  return { key: args.key, size: stored.size, etag: stored.httpEtag };
}

async function streamInto(
  env: Env,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  httpMetadata: R2HTTPMetadata | undefined,
): Promise<R2Object> {
  let received = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      received += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  const fixed = new FixedLengthStream(length);
  const pump = body.pipeThrough(counter).pipeTo(fixed.writable);
  const putting = env.BUCKET.put(key, fixed.readable, { httpMetadata });
  // Both settle either way (a failed side cancels the other), and neither rejection goes unhandled.
  const [put, piped] = await Promise.allSettled([putting, pump]);
  if (put.status === "fulfilled" && piped.status === "fulfilled") return put.value;
  const cause = put.status === "rejected" ? put.reason : (piped as PromiseRejectedResult).reason;
  if (received !== length) {
    throw new BadRequestError(`Expected a body of ${length} bytes (Content-Length) but received ${received}`, {
      cause,
    });
  }
  throw cause;
}
