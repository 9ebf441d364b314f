/**
 * The native upstream client (native-origin.ts, `upstreamClient: "native"`: libcurl in the
 * addon): the same bytes as undici from an h2 origin, an https origin that speaks only HTTP/1.1
 * and a plain http one, each reported as such, every request counted under "native"; and where
 * libcurl does not load, a cache asked for it does not start, with a code that names the fallback.
 * The guarantees above the client (bounded disk, kill -9, pinning, retries, hedging) are the other
 * origin-cache tests, run with EC_UPSTREAM_CLIENT=native.
 */
import { spawn } from "node:child_process";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRangeCache, type RangeCacheOptions } from "../../../origin-cache/index.js";
import { startRangeServer, type RangeServer } from "../../helpers/range-server.js";
import { makeSelfSignedCert } from "../../helpers/wan-emulator.js";
import { answerRange, objectBytes, tempDir } from "../fixtures.js";

const data = objectBytes(3 << 20, "native-origin");
const { key, cert } = makeSelfSignedCert();

function serve(req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void {
  answerRange(data, req, res);
}

const h2 = createSecureServer({ key, cert, allowHTTP1: true }, serve);
const h1 = createHttpsServer({ key, cert }, serve);
const base = (s: typeof h2 | typeof h1): string => `https://127.0.0.1:${(s.address() as AddressInfo).port}`;
let plain: RangeServer;

beforeAll(async () => {
  await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => h1.listen(0, "127.0.0.1", r));
  plain = await startRangeServer();
  plain.put("/o.bin", data);
});
afterAll(async () => {
  await new Promise((r) => h2.close(r));
  await new Promise((r) => h1.close(r));
  await plain.close();
});

async function readAll(origin: string, over: Partial<RangeCacheOptions> = {}) {
  const d = await tempDir();
  const cache = await createRangeCache({
    upstreams: [origin],
    dir: d.path,
    maxBytes: 16 << 20,
    blockSize: 64 << 10,
    tls: { ca: cert },
    logLevel: "silent",
    retries: 0,
    ...over,
  });
  try {
    const got = Buffer.from(await cache.read(`${origin}/o.bin`, 1000, data.length - 2000));
    const stats = cache.stats();
    return { got, versions: stats.httpVersions, clients: stats.upstreamClients };
  } finally {
    await cache.close();
    await d.remove();
  }
}

describe("the native upstream client", () => {
  it("reads the same bytes as undici over h2, and every request goes through it", async () => {
    const own = await readAll(base(h2), { upstreamClient: "native" });
    expect(own.versions).toEqual({ [base(h2)]: "h2" });
    expect(own.got.equals(data.subarray(1000, data.length - 1000))).toBe(true);
    expect(Object.keys(own.clients)).toEqual(["native"]);
    expect(own.clients.native).toBeGreaterThanOrEqual(2); // the probe and at least one pull

    const undici = await readAll(base(h2), { upstreamClient: "undici" });
    expect(Object.keys(undici.clients)).toEqual(["undici"]);
    expect(undici.got.equals(own.got)).toBe(true);
  });

  it("serves an https origin that speaks only HTTP/1.1, and a plain http one, and says so", async () => {
    const r = await readAll(base(h1), { upstreamClient: "native" });
    expect(r.versions).toEqual({ [base(h1)]: "http/1.1" });
    expect(r.got.equals(data.subarray(1000, data.length - 1000))).toBe(true);
    expect(Object.keys(r.clients)).toEqual(["native"]);

    const p = await readAll(plain.url, { upstreamClient: "native" });
    expect(p.versions).toEqual({ [plain.url]: "http/1.1" });
    expect(p.got.equals(data.subarray(1000, data.length - 1000))).toBe(true);
    expect(Object.keys(p.clients)).toEqual(["native"]);
  });

  it("refuses an origin whose certificate it cannot verify, as undici does", async () => {
    await expect(readAll(base(h2), { upstreamClient: "native", tls: {} })).rejects.toMatchObject({
      code: "ERR_UPSTREAM_TRANSPORT",
    });
  });

  it("where libcurl does not load, refuses to start with ERR_UPSTREAM_CLIENT_UNAVAILABLE naming the fallback", async () => {
    // libcurl is loaded once per process: the check runs in a child whose EC_LIBCURL names no library.
    const dir = await mkdtemp(join(tmpdir(), "ec-native-origin-"));
    try {
      const js = join(dir, "child.cjs");
      await build({
        stdin: {
          contents: `
            const { createRangeCache } = require(${JSON.stringify(join(import.meta.dirname, "../../../origin-cache/index.ts"))});
            const { libcurlStatus } = require(${JSON.stringify(join(import.meta.dirname, "../../../native/index.ts"))});
            createRangeCache({ upstreams: [process.argv[2]], dir: process.argv[3], maxBytes: 1 << 24, logLevel: "silent", upstreamClient: "native" })
              .then(() => console.log(JSON.stringify({ started: true })))
              .catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message, curl: libcurlStatus() })));
          `,
          resolveDir: dir,
          loader: "js",
        },
        bundle: true,
        platform: "node",
        format: "cjs",
        outfile: js,
        logLevel: "silent",
        define: { "import.meta.url": "__ecModuleUrl" },
        banner: { js: 'const __ecModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
      });
      const child = spawn(process.execPath, [js, plain.url, dir], {
        env: {
          ...process.env,
          EC_LIBCURL: "libcurl-not-here.so.4",
          EC_NATIVE_PATH: join(import.meta.dirname, "..", "..", "..", "native", "build", "Release", "ec_native.node"),
        },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      await new Promise((r) => child.once("exit", r));
      const r = JSON.parse(out.trim()) as { code: string; message: string; curl: { loaded: boolean; library: string } };
      expect(r.curl).toMatchObject({ loaded: false, library: "libcurl-not-here.so.4" });
      expect(r.code).toBe("ERR_UPSTREAM_CLIENT_UNAVAILABLE");
      expect(r.message).toContain("libcurl-not-here.so.4");
      expect(r.message).toContain('upstreamClient "undici"');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
