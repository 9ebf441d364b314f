/**
 * Against a plain upstream (no `exp` in its URLs) the rule is the same: a byte leaves the cache
 * only for a URL that upstream accepts. Such a URL is remembered as accepted for `grantMs`, then
 * shown to upstream once more.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRangeCache } from "../../origin-cache/index.js";
import { answerRange, objectBytes, tempDir } from "./fixtures.js";

const data = objectBytes(40_000, "plain-upstream");
let server: Server;
let base: string;
let requests = 0;

beforeAll(async () => {
  // Serves the object for ?token=good alone, as a presigned or token-checking store would.
  server = createServer((req, res) => {
    requests++;
    const u = new URL(req.url ?? "/", "http://x");
    if (u.searchParams.get("token") !== "good") return void res.writeHead(403).end();
    answerRange(data, req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("URLs of a plain upstream", () => {
  it("serves cached bytes only for a URL upstream accepts, and asks again after grantMs", async () => {
    const d = await tempDir();
    const cache = await createRangeCache({
      upstreams: [base],
      dir: d.path,
      maxBytes: 1 << 20,
      grantMs: 1,
      logLevel: "silent",
      retries: 0,
    });
    try {
      const good = `${base}/o.bin?token=good`;
      expect(Buffer.from(await cache.read(good, 0, data.length)).equals(data)).toBe(true);
      await expect(cache.read(`${base}/o.bin?token=bad`, 0, 10)).rejects.toMatchObject({
        code: "ERR_UPSTREAM_STATUS",
        status: 403,
      });
      await expect(cache.read(`${base}/o.bin`, 0, 10)).rejects.toMatchObject({ status: 403 });
      // Past grantMs the good URL is shown to upstream once more, then served from the store.
      await new Promise((r) => setTimeout(r, 20));
      const before = requests;
      expect(Buffer.from(await cache.read(good, 100, 200)).equals(data.subarray(100, 300))).toBe(true);
      expect(requests).toBe(before + 1);
    } finally {
      await cache.close();
      await d.remove();
    }
  });
});
