import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main, parseBytes, parseCacheArgs } from "../../../sdk/cli/cache.js";
import { startRangeServer, type RangeServer } from "../../helpers/range-server.js";
import { objectBytes, tempDir, until } from "../../origin-cache/fixtures.js";

let rs: RangeServer;
beforeAll(async () => {
  rs = await startRangeServer();
});
afterAll(async () => {
  await rs.close();
});

describe("ec cache", () => {
  it("parses byte counts with binary units and says what it expected", () => {
    expect(parseBytes("--max-bytes", "64M")).toBe(64 * 2 ** 20);
    expect(parseBytes("--max-bytes", "1.5GiB")).toBe(1.5 * 2 ** 30);
    expect(parseBytes("--max-bytes", "4096")).toBe(4096);
    expect(() => parseBytes("--max-bytes", "-3")).toThrow(
      'Expected a byte count like 200G for --max-bytes but received "-3"',
    );
  });

  it("listens on loopback by default and takes several upstreams", () => {
    const { options } = parseCacheArgs([
      "--upstream",
      "http://a",
      "--upstream",
      "http://b",
      "--dir",
      "/d",
      "--max-bytes",
      "1G",
    ]);
    expect(options.listen).toEqual({ host: "127.0.0.1", port: 7070 });
    expect(options.upstreams).toEqual(["http://a", "http://b"]);
    expect(() => parseCacheArgs(["--dir", "/d", "--max-bytes", "1G"])).toThrow(/Expected --upstream URL/);
    expect(() =>
      parseCacheArgs(["--upstream", "http://a", "--dir", "/d", "--max-bytes", "1G", "--listen", "nope"]),
    ).toThrow(/Expected HOST:PORT for --listen/);
  });

  it("takes the upstream client by name and refuses others", () => {
    const base = ["--upstream", "http://a", "--dir", "/d", "--max-bytes", "1G"];
    expect(parseCacheArgs([...base, "--upstream-client", "native"]).options.upstreamClient).toBe("native");
    expect(parseCacheArgs(base).options.upstreamClient).toBeUndefined();
    expect(() => parseCacheArgs([...base, "--upstream-client", "curl"])).toThrow(
      'Expected one of undici, native, node-http2 for --upstream-client but received "curl"',
    );
  });

  it("serves until SIGTERM, then prints a summary", async () => {
    const data = objectBytes(300_000, "cli");
    rs.put("/v1/objects/cli.bin", data);
    const d = await tempDir();
    const lines: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const done = main([
        "--upstream",
        rs.url,
        "--dir",
        d.path,
        "--max-bytes",
        "16M",
        "--listen",
        "127.0.0.1:0",
        "--block-size",
        "64K",
        "--json",
      ]);
      await until(() => lines.length > 0, "the service to announce itself");
      const up = JSON.parse(lines[0] as string) as { cache: string; maxBytes: number };
      expect(up.maxBytes).toBe(16 * 2 ** 20);
      const res = await request(`${up.cache}/v1/fetch?url=${encodeURIComponent(`${rs.url}/v1/objects/cli.bin`)}`, {
        headers: { range: "bytes=1000-199999" },
      });
      expect(res.statusCode).toBe(206);
      expect(Buffer.from(await res.body.arrayBuffer()).equals(data.subarray(1000, 200000))).toBe(true);
      process.emit("SIGTERM", "SIGTERM");
      expect(await done).toBe(0);
      const summary = JSON.parse(lines[1] as string) as {
        misses: number;
        bytesFromUpstream: number;
        httpVersions: Record<string, string>;
      };
      expect(summary.misses).toBe(4);
      // A plain http upstream is HTTP/1.1 keep-alive; TLS upstreams negotiate h2 (see test/origin-cache).
      expect(summary.httpVersions).toEqual({ [rs.url]: "http/1.1" });
      expect(summary.bytesFromUpstream).toBeGreaterThanOrEqual(199_000);
    } finally {
      spy.mockRestore();
      await d.remove();
    }
  });
});
