/**
 * The client's reading of a compact locate line (LocateCompactLine, `"form": "compact"`): checked
 * by hand in one pass over the line instead of a schema walk of every run, and turned into the
 * LocateBatchLine the plane works with. A line that is not of the shape is ERR_CACHE_PROTOCOL.
 */
import { describeReceived } from "../../common/errors.js";
import type { Lease, LocateBatchLine, LocatedSpan, LocateRun } from "../../common/schema/cache-locate.js";
import { SdkError, SdkErrorCode } from "../errors.js";

const WHAT =
  "a compact locate line {at, paths, spans: [{etag, size, runs: [path, offset, length, …]} | null], lease?, error?}";

class Malformed extends Error {}

function fail(where: string, value: unknown): never {
  throw new Malformed(`${where}: ${describeReceived(value)}`);
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isText = (v: unknown): v is string => typeof v === "string" && v.length > 0;

function leaseOf(v: unknown): Lease {
  if (!isObject(v) || !isText(v.id) || typeof v.expiresAt !== "number" || !Number.isSafeInteger(v.expiresAt))
    fail("lease", v);
  return { id: v.id, expiresAt: v.expiresAt };
}

function spanOf(v: unknown, paths: readonly string[], k: number): LocatedSpan | null {
  if (v === null) return null;
  if (!isObject(v) || !isText(v.etag) || !isCount(v.size) || !Array.isArray(v.runs)) fail(`spans.${k}`, v);
  const flat = v.runs as unknown[];
  if (flat.length % 3 !== 0) fail(`spans.${k}.runs`, flat);
  const runs: LocateRun[] = new Array(flat.length / 3);
  for (let i = 0; i < flat.length; i += 3) {
    const [p, offset, length] = [flat[i], flat[i + 1], flat[i + 2]];
    if (!isCount(p) || p >= paths.length || !isCount(offset) || !isCount(length) || length === 0)
      fail(`spans.${k}.runs.${i / 3}`, [p, offset, length]);
    runs[i / 3] = { path: paths[p]!, offset, length };
  }
  return { etag: v.etag, size: v.size, runs };
}

/** One line of a compact answer's text as a LocateBatchLine; ERR_CACHE_PROTOCOL when it is not one. */
export function readCompactLine(text: string): LocateBatchLine {
  try {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      fail("a line that is not JSON", text.slice(0, 80));
    }
    if (!isObject(json)) fail("line", json);
    const { at, paths, spans } = json;
    if (!Array.isArray(at) || at.length === 0 || !at.every(isCount)) fail("at", at);
    if (!Array.isArray(paths) || !paths.every(isText)) fail("paths", paths);
    if (!Array.isArray(spans) || spans.length !== at.length) fail("spans", spans);
    const line: LocateBatchLine = { at, spans: spans.map((s, k) => spanOf(s, paths, k)) };
    if (json.lease !== undefined) line.lease = leaseOf(json.lease);
    if (json.error !== undefined) {
      const e = json.error;
      if (!isObject(e) || typeof e.code !== "string" || typeof e.message !== "string") fail("error", e);
      line.error = { code: e.code, message: e.message };
    }
    return line;
  } catch (err) {
    if (!(err instanceof Malformed)) throw err;
    throw new SdkError(SdkErrorCode.CacheProtocol, `Expected ${WHAT} but received ${err.message}`);
  }
}
