/**
 * A plain HTTP/1.1 object server with exact single-range semantics (200/206/412/416, ETag,
 * If-Match), serving in-memory objects at any path. It counts requests so tests can prove
 * single-flight and prefetch. Loopback only, port 0.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RangeServer {
  /** Base URL, e.g. http://127.0.0.1:PORT */
  readonly url: string;
  /** Stores (or replaces, with a new ETag) the object at `path` (e.g. "/v1/objects/a.mp4"). */
  put(path: string, data: Uint8Array): string;
  etag(path: string): string | undefined;
  /** GET requests seen per path, and all of them. */
  requests(path?: string): number;
  /** `Range` headers seen, in order. */
  readonly ranges: string[];
  resetCounts(): void;
  close(): Promise<void>;
}

export async function startRangeServer(): Promise<RangeServer> {
  const objects = new Map<string, { data: Uint8Array; etag: string }>();
  const counts = new Map<string, number>();
  const ranges: string[] = [];
  let version = 0;

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method === "GET") counts.set(path, (counts.get(path) ?? 0) + 1);
    const obj = objects.get(path);
    if (!obj) {
      res.writeHead(404).end();
      return;
    }
    const size = obj.data.length;
    res.setHeader("etag", obj.etag);
    res.setHeader("accept-ranges", "bytes");
    const ifMatch = req.headers["if-match"];
    if (ifMatch && ifMatch !== "*" && !ifMatch.split(",").some((t) => t.trim() === obj.etag)) {
      res.writeHead(412).end();
      return;
    }
    const range = req.headers.range;
    if (range) ranges.push(range);
    const m = range ? /^bytes=(\d*)-(\d*)$/.exec(range) : null;
    let start = 0;
    let end = size - 1;
    let partial = false;
    if (m && !(m[1] === "" && m[2] === "")) {
      partial = true;
      if (m[1] === "") start = Math.max(0, size - Number(m[2]));
      else {
        start = Number(m[1]);
        end = m[2] === "" ? size - 1 : Math.min(size - 1, Number(m[2]));
      }
      if (start >= size || (m[1] === "" && Number(m[2]) === 0)) {
        res.writeHead(416, { "content-range": `bytes */${size}` }).end();
        return;
      }
    }
    const body = obj.data.subarray(start, end + 1);
    res.writeHead(partial ? 206 : 200, {
      "content-length": body.length,
      "content-type": "application/octet-stream",
      ...(partial ? { "content-range": `bytes ${start}-${end}/${size}` } : {}),
    });
    res.end(req.method === "HEAD" ? undefined : body);
  };

  const server = createServer({ keepAliveTimeout: 30_000 }, handle);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    put(path, data) {
      const etag = `"${createHash("sha1").update(data).digest("hex").slice(0, 16)}-${++version}"`;
      objects.set(path, { data, etag });
      return etag;
    },
    etag: (path) => objects.get(path)?.etag,
    requests: (path) =>
      path === undefined ? [...counts.values()].reduce((a, b) => a + b, 0) : (counts.get(path) ?? 0),
    ranges,
    resetCounts() {
      counts.clear();
      ranges.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
