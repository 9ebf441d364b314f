/**
 * The client's hand-written check of a compact locate line: it takes what the wire schema takes,
 * refuses the rest with ERR_CACHE_PROTOCOL, and a plane whose cache answers a malformed line
 * reads the span the per-read way.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { LocateCompactLine } from "../../../common/schema/cache-locate.js";
import { readCompactLine } from "../../../sdk/source/compact-lines.js";
import { LocalPlane } from "../../../sdk/source/local-plane.js";

const good = {
  at: [2, 0],
  paths: ["/cache/slab-0", "/cache/slab-1"],
  spans: [{ etag: '"e"', size: 9000, runs: [0, 4096, 100, 1, 0, 50] }, null],
  lease: { id: "l1", expiresAt: 1_900_000_000_000 },
};

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe("readCompactLine", () => {
  it("expands a compact line's runs to the object form", () => {
    expect(readCompactLine(JSON.stringify(good))).toEqual({
      at: [2, 0],
      spans: [
        {
          etag: '"e"',
          size: 9000,
          runs: [
            { path: "/cache/slab-0", offset: 4096, length: 100 },
            { path: "/cache/slab-1", offset: 0, length: 50 },
          ],
        },
        null,
      ],
      lease: good.lease,
    });
    const failed = { at: [1], paths: [], spans: [null], error: { code: "ERR_ETAG_CHANGED", message: "changed" } };
    expect(readCompactLine(JSON.stringify(failed))).toEqual({ at: [1], spans: [null], error: failed.error });
  });

  const malformed: [string, unknown][] = [
    ["not an object", [1, 2]],
    ["no at", { ...good, at: undefined }],
    ["an empty at", { ...good, at: [], spans: [] }],
    ["a negative index", { ...good, at: [-1, 0] }],
    ["no paths", { ...good, paths: undefined }],
    ["an empty path", { ...good, paths: ["", "/x"] }],
    ["fewer answers than indexes", { ...good, spans: [null] }],
    ["a run of two numbers", { ...good, spans: [{ etag: '"e"', size: 9000, runs: [0, 4096] }, null] }],
    ["a path index past the table", { ...good, spans: [{ etag: '"e"', size: 9000, runs: [2, 0, 10] }, null] }],
    ["a run of no bytes", { ...good, spans: [{ etag: '"e"', size: 9000, runs: [0, 0, 0] }, null] }],
    ["a fractional offset", { ...good, spans: [{ etag: '"e"', size: 9000, runs: [0, 0.5, 10] }, null] }],
    ["a span without an etag", { ...good, spans: [{ size: 9000, runs: [] }, null] }],
    ["a lease without an id", { ...good, lease: { expiresAt: 1 } }],
    ["an error without a code", { ...good, error: { message: "x" } }],
  ];
  it.each(malformed)("refuses %s with ERR_CACHE_PROTOCOL", (_what, line) => {
    expect(() => readCompactLine(JSON.stringify(line))).toThrow(
      expect.objectContaining({
        code: "ERR_CACHE_PROTOCOL",
        message: expect.stringMatching(/^Expected a compact locate line .* but received /),
      }),
    );
  });

  it("refuses a line that is not JSON", () => {
    expect(() => readCompactLine('{"at":[0],')).toThrow(expect.objectContaining({ code: "ERR_CACHE_PROTOCOL" }));
  });

  it("takes what the wire schema takes", () => {
    expect(LocateCompactLine.safeParse(good).success).toBe(true);
    for (const [, line] of malformed.slice(1, 6)) expect(LocateCompactLine.safeParse(line).success).toBe(false);
  });
});

describe("a plane whose cache answers a malformed compact line", () => {
  it("reads the span the per-read way", async () => {
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let text = "";
      req.on("data", (c: Buffer) => (text += c.toString("utf8")));
      req.on("end", () => {
        if (req.method !== "POST") {
          // The plane's close ends its client's leases (DELETE /v1/leases): none here.
          res.end('{"ended":0}');
          return;
        }
        const body = JSON.parse(text) as { spans?: unknown };
        bodies.push(body);
        if (body.spans) {
          res.setHeader("content-type", "application/x-ndjson");
          // The object form's runs, not the compact one asked for.
          res.end(
            `${JSON.stringify({ at: [0], paths: ["/x"], spans: [{ etag: '"e"', size: 10, runs: [{ path: "/x" }] }] })}\n`,
          );
        } else {
          res.statusCode = 503;
          res.end('{"error":{"code":"ERR_LOCATE_UNAVAILABLE","message":"full"}}');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
    const agent = new Agent();
    cleanup.push(() => agent.close());
    const plane = new LocalPlane(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, agent);
    cleanup.push(() => plane.close());
    const span = { url: "http://127.0.0.1:1/v1/objects/a.mp4?exp=1&sig=x", etag: '"e"', offset: 0, length: 10 };
    plane.plan([span]);
    expect(await plane.read(span.url, span.offset, span.length, span.etag)).toBeUndefined();
    expect(plane.fallbacks).toBe(1);
    expect(bodies[0]).toMatchObject({ form: "compact" });
    expect(plane.enabled).toBe(true);
  });
});
