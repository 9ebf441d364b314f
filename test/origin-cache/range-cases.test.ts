import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import { caseHeaders, checkAnswer, RANGE_CASES, RANGE_OBJECT_SIZE } from "../common/byte-range-cases.js";
import { objectBytes, tempDir, useUpstream } from "./fixtures.js";

const OBJECT = "/v1/objects/range/obj.bin";
const EMPTY = "/v1/objects/range/empty.bin";
const data = objectBytes(RANGE_OBJECT_SIZE, "range-cases");
// The cache pulls over TLS + HTTP/2 on loopback, as from a real edge.
const up = useUpstream({ [OBJECT]: data, [EMPTY]: new Uint8Array(0) }, { rttMs: 1 });
let svc: CacheService;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const d = await tempDir();
  removeDir = d.remove;
  svc = await startCache({
    upstreams: [up.wan.url],
    dir: d.path,
    maxBytes: 8 << 20,
    blockSize: 4096,
    tls: { ca: up.wan.ca },
    logLevel: "silent",
  });
});
afterAll(async () => {
  await svc?.close();
  await removeDir?.();
});

describe("the shared table of Range / If-Range / If-Match cases (test/common/byte-range-cases.ts)", () => {
  for (const c of RANGE_CASES) {
    it(c.name, async () => {
      const path = c.object === "empty" ? EMPTY : OBJECT;
      const url = `${svc.url}/v1/fetch?url=${encodeURIComponent(`${up.wan.url}${path}?exp=9999999999&sig=x`)}`;
      const res = await request(url, { method: c.method ?? "GET", headers: caseHeaders(c, up.rs.etag(path) ?? "") });
      const body = new Uint8Array(await res.body.arrayBuffer());
      const one = (name: string): string | null => {
        const v = res.headers[name];
        return v === undefined ? null : String(v);
      };
      const got = {
        status: res.statusCode,
        contentRange: one("content-range"),
        contentLength: one("content-length"),
        body,
      };
      expect(checkAnswer(c, c.object === "empty" ? new Uint8Array(0) : data, got)).toEqual([]);
      if (c.expect.status === 206 || c.expect.status === 200) expect(one("accept-ranges")).toBe("bytes");
      if (c.expect.status === 416 && c.method !== "HEAD") {
        expect(JSON.parse(Buffer.from(body).toString()).error.code).toBe("ERR_RANGE_NOT_SATISFIABLE");
      }
    });
  }
});
