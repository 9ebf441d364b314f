/**
 * The one ETag-pinned ranged GET of ec (the origin-cache's pulls, the SDK's presigned S3 reads):
 * one range read into memory, gated by an in-flight cap, pinned to an ETag, retried on transient
 * failures (common/retry-policy.ts), and resumed from the first missing byte after a partial
 * body. Every response body is either read to the end or destroyed.
 */
import { parseContentRange } from "../../common/byte-range.js";
import { isTransientStatus } from "../../common/transient-errors.js";
import { UpstreamStatusError } from "../errors.js";
import { Answer } from "./answer.js";
import { Reception, receives } from "./native-origin.js";
import type { Dispatch } from "./h2-origin.js";
import { hedged } from "./hedge.js";
import { checkPinned, ifMatch, type Pin } from "./etag-pin.js";
import type { Limiter } from "../../common/limiter.js";
import { TransientUpstreamError, withRetry, type RetryPolicy } from "./retry.js";

export interface RangeFetchContext {
  readonly dispatcher: Dispatch;
  readonly limiter: Limiter;
  readonly retry: RetryPolicy;
  readonly onRetry?: (err: unknown) => void;
  readonly onBytes?: (n: number) => void;
  readonly onRequest?: () => void;
  /** Send a second request when headers take longer than this; off when undefined. */
  readonly hedgeAfterMs?: number;
  readonly onHedge?: () => void;
  /** Refuse a 200/206 without an ETag (checkPinned); for upstreams not known to honour If-Match. */
  readonly requireEtag?: boolean;
  /**
   * The error for a final (not transient) status of 300 or more, from its body (the first
   * REFUSED_BODY bytes); undefined or absent: ERR_UPSTREAM_STATUS, the body unread.
   */
  readonly refused?: (status: number, body: string) => Error | undefined;
}

/** Bytes of a refusal's body read for `refused`: an S3 or JSON error body fits in far less. */
const REFUSED_BODY = 64 << 10;

/** The first REFUSED_BODY bytes of an answer's body, as text; the rest is dropped. */
async function refusalBody(res: Answer): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  await res.read((chunk) => {
    if (size < REFUSED_BODY) chunks.push(chunk.subarray(0, REFUSED_BODY - size));
    size += chunk.length;
  });
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Fetches `[start, end)` of the pinned object at `url` (path and signed query) into `out` (a
 * fresh buffer unless given; exactly `end - start` bytes). `onProgress` hears, after every chunk,
 * the buffer and how many of its bytes are final: bytes before `got` never change, however many
 * retries follow, so a caller may hand them on at once. Nothing writes into `out` once this settles.
 *
 * @example
 * const bytes = await fetchRange(ctx, new URL(signedUrl), pin, 0, 8 << 20);
 */
export async function fetchRange(
  ctx: RangeFetchContext,
  url: URL,
  pin: Pin,
  start: number,
  end: number,
  signal?: AbortSignal,
  onProgress?: (out: Buffer, got: number) => void,
  out: Buffer = Buffer.allocUnsafe(end - start),
  notifyEvery = 0,
): Promise<Buffer> {
  if (out.length !== end - start)
    throw new RangeError(
      `Expected a buffer of ${end - start} bytes for bytes=${start}-${end - 1} but received ${out.length}`,
    );
  let got = 0;
  let before = 0;
  const path = url.pathname + url.search;
  await withRetry(
    async () => {
      before = got;
      // The last attempt got every byte before its stream failed: nothing is left to ask for.
      if (got === out.length) return;
      const release = await ctx.limiter.acquire();
      try {
        ctx.onRequest?.();
        const from = start + got;
        const headers = { range: `bytes=${from}-${end - 1}`, ...ifMatch(pin) };
        const d = ctx.dispatcher;
        // The native client writes the body into `out` itself, from the first missing byte.
        const open = receives(d)
          ? (sig: AbortSignal | undefined) =>
              d.receive(
                { path, headers, out, at: got, from, to: end - 1, size: pin.size, etag: pin.etag, notifyEvery },
                sig,
              ).started
          : (sig: AbortSignal | undefined) => new Answer(d, { origin: url.origin, path, headers }, sig).started;
        const res: Answer | Reception = await hedged(
          open as (sig: AbortSignal | undefined) => Promise<Answer | Reception>,
          ctx.hedgeAfterMs,
          () => {
            ctx.onRequest?.();
            ctx.onHedge?.();
          },
          signal,
          (lost) => lost.abort(),
        );
        let consumed = false;
        try {
          checkPinned(pin, res.statusCode, res.headers, ctx.requireEtag);
          if (isTransientStatus(res.statusCode)) {
            throw new TransientUpstreamError(`upstream answered ${res.statusCode}`);
          }
          if (res.statusCode >= 300 && ctx.refused) {
            const body = res instanceof Reception ? await res.text() : await refusalBody(res);
            consumed = true;
            throw (
              ctx.refused(res.statusCode, body) ??
              new UpstreamStatusError(url.href, res.statusCode, `expected 206 for bytes=${from}-${end - 1}`)
            );
          }
          const whole = res.statusCode === 200 && from === 0 && end === pin.size;
          if (res.statusCode !== 206 && !whole)
            throw new UpstreamStatusError(url.href, res.statusCode, `expected 206 for bytes=${from}-${end - 1}`);
          if (res.statusCode === 206) {
            const cr = parseContentRange(res.headers["content-range"] as string | undefined);
            if (cr?.start !== from || cr.end !== end - 1) {
              throw new TransientUpstreamError(
                `Content-Range ${String(res.headers["content-range"])} does not match bytes=${from}-${end - 1}`,
              );
            }
          }
          // The addon gates the body on the same checks; an answer it did not take is not the range.
          if (res instanceof Reception && !res.accepted)
            throw new TransientUpstreamError(`the answer to bytes=${from}-${end - 1} is not that range`);
          try {
            if (res instanceof Reception) {
              const at = got;
              await res.fill((bytes) => {
                const was = got;
                got = at + bytes;
                ctx.onBytes?.(got - was);
                onProgress?.(out, got);
              });
            } else
              await res.read((chunk) => {
                if (got + chunk.length > out.length)
                  throw new TransientUpstreamError("upstream sent more bytes than the range holds");
                chunk.copy(out, got);
                got += chunk.length;
                ctx.onBytes?.(chunk.length);
                onProgress?.(out, got);
              });
          } catch (err) {
            if (got !== out.length || err instanceof TransientUpstreamError) throw err;
          }
          consumed = true;
        } finally {
          if (!consumed) res.abort();
        }
        if (got < out.length) throw new TransientUpstreamError(`short body: ${got - before} of ${end - from} bytes`);
      } finally {
        release();
      }
    },
    ctx.retry,
    {
      url: url.href,
      progressed: () => got > before,
      ...(signal ? { signal } : {}),
      onRetry: (err) => ctx.onRetry?.(err),
    },
  );
  return out;
}
