/** A request's JSON body, bounded in size and checked against its zod schema. */
import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import { CacheArgumentError, CacheError } from "../errors.js";

/**
 * Reads and validates a JSON body; `what` names the expected shape in the error
 * ("a plan {client?, ranges: [...]}"), `tooLarge` is the code of a body over `maxBytes`.
 */
export async function readJson<S extends z.ZodType>(
  req: IncomingMessage,
  schema: S,
  what: string,
  maxBytes: number,
  tooLarge = "ERR_BODY_TOO_LARGE",
): Promise<z.infer<S>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes)
      throw new CacheError(tooLarge, `Expected a body of at most ${maxBytes} bytes but received more`, 413);
    chunks.push(chunk);
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (cause) {
    throw new CacheArgumentError(`Expected a JSON body (${what}) but received invalid JSON`, { cause });
  }
  return checkJson(json, schema, what);
}

/** A parsed body checked against its schema, with readJson's error. */
export function checkJson<S extends z.ZodType>(json: unknown, schema: S, what: string): z.infer<S> {
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CacheArgumentError(
      `Expected ${what} but ${issue ? `${issue.path.join(".") || "body"}: ${issue.message}` : "received something else"}`,
    );
  }
  return parsed.data;
}
