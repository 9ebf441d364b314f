import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { pushDir } from "../../../sdk/push/index.js";
import { InvalidOptionError } from "../../../sdk/errors.js";

/** A real HTTP server standing in for the edge's PUT, with scripted failures. */
interface Recorded {
  url: string;
  length: number;
  auth: string | undefined;
  type: string | undefined;
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe("pushDir", () => {
  let server: Server;
  let base: string;
  let dir: string;
  let puts: Recorded[];
  let failFirst: Map<string, number>;
  let inFlight = 0;
  let maxInFlight = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ec-push-"));
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    for (let i = 0; i < 9; i++) writeFileSync(join(dir, `f${i}.mp4`), Buffer.alloc(1000 + i, i));
    writeFileSync(join(dir, "a", "b", "deep.bin"), Buffer.alloc(5000, 1));
    server = createServer(async (req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const data = await body(req);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      const left = failFirst.get(req.url!) ?? 0;
      if (left > 0) {
        failFirst.set(req.url!, left - 1);
        res.writeHead(503).end("busy");
        return;
      }
      puts.push({
        url: req.url!,
        length: data.length,
        auth: req.headers.authorization,
        type: req.headers["content-type"],
      });
      res
        .writeHead(201, { "content-type": "application/json" })
        .end(JSON.stringify({ size: data.length, etag: '"e"' }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    puts = [];
    failFirst = new Map();
    maxInFlight = 0;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("puts every file once under prefix/relative path with the token and a content type", async () => {
    const summary = await pushDir({ dir, prefix: "ds", edge: base, token: "tok", concurrency: 3 });
    expect(summary).toMatchObject({ files: 10, failed: 0 });
    expect(puts.map((p) => p.url).sort()).toEqual(
      ["/v1/objects/ds/a/b/deep.bin", ...Array.from({ length: 9 }, (_, i) => `/v1/objects/ds/f${i}.mp4`)].sort(),
    );
    expect(puts.every((p) => p.auth === "Bearer tok")).toBe(true);
    expect(puts.find((p) => p.url.endsWith("f0.mp4"))!.type).toBe("video/mp4");
    expect(maxInFlight).toBeLessThanOrEqual(3);
    expect(maxInFlight).toBeGreaterThan(1);
  });

  it("retries a 503 and reports progress that adds up to the bytes sent once", async () => {
    failFirst.set("/v1/objects/ds/f3.mp4", 2);
    let bytes = 0;
    const summary = await pushDir({
      dir,
      prefix: "ds",
      edge: base,
      token: "tok",
      onProgress: (e) => ("bytes" in e ? (bytes += e.bytes) : undefined),
    });
    expect(summary.failed).toBe(0);
    expect(bytes).toBe(summary.bytes);
  });

  it("gives up on a file after its retries and names it, while the rest land", async () => {
    failFirst.set("/v1/objects/ds/f5.mp4", 10);
    const summary = await pushDir({ dir, prefix: "ds", edge: base, token: "tok" });
    expect(summary.failed).toBe(1);
    expect(summary.errors[0]).toMatchObject({ key: "ds/f5.mp4", code: "ERR_PUSH_FAILED" });
    expect(summary.files).toBe(9);
  });

  it("refuses an invalid key before sending any byte", async () => {
    await expect(pushDir({ dir, prefix: "_ec", edge: base, token: "tok" })).rejects.toBeInstanceOf(InvalidOptionError);
    expect(puts).toEqual([]);
  });
});
