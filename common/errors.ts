import { z } from "zod";

/** The one JSON error body every ec service returns. */
export const ErrorBody = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export interface EcErrorOptions {
  readonly cause?: unknown;
  /** The HTTP status of the answer this error reports. */
  readonly status?: number;
}

/**
 * Base of every typed ec error. Each part derives its own base (EdgeError, CacheError,
 * NativeError, SdkError) and subclasses with a fixed `name` and a stable `code`;
 * callers branch on `code`, never on the message.
 */
export class EcError extends Error {
  readonly code: string;
  /**
   * The HTTP status the error is (edge, origin-cache) or came from (an answer a client relays),
   * so callers branch on `code` and `status`, never on the message.
   */
  readonly status?: number;
  constructor(code: string, message: string, options?: EcErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "EcError";
    this.code = code;
    if (options?.status !== undefined) this.status = options.status;
  }

  toJSON(): ErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

/** "Expected a positive integer for frames but received -3" */
export function describeReceived(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === "object") return "an object";
  return String(value);
}
