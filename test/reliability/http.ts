/**
 * Raw HTTP for hostile-input tests: node:http sends the path exactly as given (fetch and undici
 * would resolve `..` and `%2e%2e` before a byte leaves), and the reply comes back whole.
 */
import { request } from "node:http";
import type { RangeAnswer } from "../common/byte-range-cases.js";
import { wrongBytes } from "../common/byte-range-fuzz.js";

export interface RawReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  /** The body's bytes as they came (`body` is their UTF-8 reading). */
  readonly bytes: Buffer;
}

/**
 * One request with the path sent verbatim.
 *
 * @example
 * const r = await rawRequest("http://127.0.0.1:8787", "GET", "/v1/objects/a/%2e%2e/b");
 */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Uint8Array,
): Promise<RawReply> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const bytes = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: bytes.toString("utf8"), bytes });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * Why `reply` to a GET of an object of `data`, under any Range, If-Range and If-Match, is not
 * a clean answer with the right bytes; undefined when it is.
 */
export function wrongRangeReply(reply: RawReply, data: Uint8Array): string | undefined {
  if (![200, 206, 412, 416].includes(reply.status)) return uncleanReply(reply) ?? `status ${reply.status}`;
  return uncleanReply(reply) ?? wrongBytes(data, rangeAnswer(reply));
}

/** The reply in the form the Range checks of test/common read. */
function rangeAnswer(reply: RawReply): RangeAnswer {
  const one = (name: string): string | null => {
    const v = reply.headers[name];
    return v === undefined ? null : String(v);
  };
  return {
    status: reply.status,
    contentRange: one("content-range"),
    contentLength: one("content-length"),
    body: reply.bytes,
  };
}

/** What an error body must never carry: stack frames, internal error names, file paths. */
const INTERNALS =
  /\bat .+\(|\.ts:\d+|\.js:\d+|TypeError|ReferenceError|RangeError|SyntaxError|node_modules|\/work\/|file:\/\//;

/**
 * Why `reply` is not a clean client error, or undefined when it is: a 4xx (or a success) whose
 * error body is `{"error":{code,message}}` with an ERR_ code and nothing internal in it.
 */
export function uncleanReply(reply: RawReply): string | undefined {
  if (reply.status >= 500) return `status ${reply.status}: ${reply.body.slice(0, 300)}`;
  if (INTERNALS.test(reply.body)) return `internals in the body: ${reply.body.slice(0, 300)}`;
  if (reply.status < 400 || reply.body.length === 0) return undefined;
  try {
    const parsed = JSON.parse(reply.body) as { error?: { code?: unknown; message?: unknown } };
    if (
      typeof parsed.error?.code !== "string" ||
      !parsed.error.code.startsWith("ERR_") ||
      typeof parsed.error.message !== "string"
    ) {
      return `not an error body: ${reply.body.slice(0, 300)}`;
    }
  } catch {
    return `not JSON: ${reply.body.slice(0, 300)}`;
  }
  return undefined;
}
