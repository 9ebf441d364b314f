/**
 * The upstream client on node:http2 (h2-origin.ts, `upstreamClient: "node-http2"`): the windows and frame
 * size it asks of an h2 origin, the same bytes as the undici client, and an https origin that
 * speaks only HTTP/1.1 still served (through undici) and reported as such.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse, type Settings } from "node:http2";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRangeCache, type RangeCacheOptions } from "../../../origin-cache/index.js";
import { makeSelfSignedCert } from "../../helpers/wan-emulator.js";
import { answerRange, objectBytes, tempDir } from "../fixtures.js";

const data = objectBytes(3 << 20, "h2-origin");
const { key, cert } = makeSelfSignedCert();
/** The SETTINGS of each client session the h2 origin saw. */
const clientSettings: Settings[] = [];

function serve(req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse): void {
  answerRange(data, req, res);
}

const h2 = createSecureServer({ key, cert, allowHTTP1: true }, serve);
h2.on("session", (s) => s.once("remoteSettings", (settings) => clientSettings.push(settings)));
const h1 = createHttpsServer({ key, cert }, serve);
const base = (s: typeof h2 | typeof h1): string => `https://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => h1.listen(0, "127.0.0.1", r));
});
afterAll(async () => {
  await new Promise((r) => h2.close(r));
  await new Promise((r) => h1.close(r));
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
    return { got, versions: cache.stats().httpVersions };
  } finally {
    await cache.close();
    await d.remove();
  }
}

describe("the node:http2 upstream client", () => {
  it("asks an h2 origin for 8 MiB stream windows and the largest frames, and reads the same bytes as undici", async () => {
    clientSettings.length = 0;
    const own = await readAll(base(h2), { upstreamClient: "node-http2" });
    expect(own.versions).toEqual({ [base(h2)]: "h2" });
    expect(own.got.equals(data.subarray(1000, data.length - 1000))).toBe(true);
    expect(clientSettings).toHaveLength(1);
    expect(clientSettings[0]).toMatchObject({ initialWindowSize: 8 << 20, maxFrameSize: (1 << 24) - 1 });

    const undici = await readAll(base(h2), { upstreamClient: "undici" });
    expect(undici.versions).toEqual({ [base(h2)]: "h2" });
    expect(undici.got.equals(own.got)).toBe(true);
  });

  it("serves an https origin that speaks only HTTP/1.1 and says so", async () => {
    const r = await readAll(base(h1), { upstreamClient: "node-http2" });
    expect(r.versions).toEqual({ [base(h1)]: "http/1.1" });
    expect(r.got.equals(data.subarray(1000, data.length - 1000))).toBe(true);
  });

  it("refuses an unknown upstreamClient", async () => {
    await expect(readAll(base(h2), { upstreamClient: "curl" as never })).rejects.toMatchObject({
      code: "ERR_INVALID_ARGUMENT",
    });
  });
});
