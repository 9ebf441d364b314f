import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { edgeFetch } from "../../../sdk/source/edge-fetch.js";
import { startWanEmulator, type WanEmulator } from "../../helpers/wan-emulator.js";

const page = JSON.stringify({
  version: 1,
  root: "d",
  entries: Array.from({ length: 2000 }, (_, i) => ({ key: `d/${i}` })),
});

describe("edgeFetch", () => {
  let upstream: Server;
  let wan: WanEmulator;
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      if (req.url === "/page") {
        res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "x-page": "1" });
        res.end(gzipSync(page));
      } else if (req.method === "POST") {
        let body = "";
        req.on("data", (d: Buffer) => (body += d.toString()));
        req.on("end", () =>
          res.writeHead(201, { "content-type": "text/plain" }).end(`${req.headers.authorization} ${body}`),
        );
      } else
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"code":"ERR_X","message":"no"}}');
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    wan = await startWanEmulator({ target: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` });
  });
  afterAll(async () => {
    await wan.close();
    await new Promise((r) => upstream.close(r));
  });

  it("inflates a gzip page over HTTP/2 and answers like fetch: status, headers, body", async () => {
    const f = edgeFetch({ ca: wan.ca });
    try {
      const res = await f.fetch(`${wan.url}/page`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(res.headers.get("content-encoding")).toBeNull();
      expect(await res.text()).toBe(page);
      const missing = await f.fetch(`${wan.url}/nothing`, { headers: { authorization: "Bearer t" } });
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ error: { code: "ERR_X", message: "no" } });
      const posted = await f.fetch(`${wan.url}/urls`, {
        method: "POST",
        headers: { authorization: "Bearer t" },
        body: "{}",
      });
      expect([posted.status, await posted.text()]).toEqual([201, "Bearer t {}"]);
      expect([...wan.stats.httpVersions]).toEqual(["h2"]);
    } finally {
      await f.close();
    }
  });

  it("carries the table's pages in flight on one HTTP/2 connection, not a TLS handshake each", async () => {
    const f = edgeFetch({ ca: wan.ca });
    try {
      const sessions = wan.stats.sessions;
      // The head first, then every page at once, as the table reader asks for them.
      await (await f.fetch(`${wan.url}/page`)).text();
      const pages = await Promise.all(
        Array.from({ length: 50 }, async () => (await f.fetch(`${wan.url}/page`)).text()),
      );
      expect(pages.every((p) => p === page)).toBe(true);
      expect(wan.stats.sessions - sessions).toBe(1);
    } finally {
      await f.close();
    }
  });
});
