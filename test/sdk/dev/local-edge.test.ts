import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedObjectUrl } from "../../../common/sign.js";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";

/**
 * One request written whole in one write, and everything the server answers until it closes. A
 * server that answers before reading a body and then closes resets the connection if body bytes
 * arrive after its close, which can lose its answer: a client streaming the body in pieces
 * (undici with a stream) races that; a request that is already all there does not.
 */
function rawRequest(base: string, text: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.write(text));
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", reject);
  });
}

describe("startLocalEdge", () => {
  let dir: string;
  let edge: LocalEdge;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ec-local-edge-"));
    edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  });

  afterAll(async () => {
    await edge?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes private .dev.vars with all three secrets into the given folder", () => {
    expect(statSync(join(dir, ".dev.vars")).mode & 0o777).toBe(0o600);
    expect(edge.token).toMatch(/^ec_dev_/);
    expect(edge.signingKey.length).toBeGreaterThan(20);
    expect(Buffer.from(edge.manifestKey, "base64").length).toBe(48); // PKCS#8 DER of an Ed25519 key
    // Outside the checkout nothing else keeps the secrets out of a commit.
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toMatch(/^\*$/m);
  });

  it("serves PUT with its token and signed GET with its signing key", async () => {
    const put = await fetch(`${edge.url}/v1/objects/dev/hello.txt`, {
      method: "PUT",
      body: "hello edge",
      headers: { authorization: `Bearer ${edge.token}` },
    });
    expect(put.status).toBe(201);
    const url = await signedObjectUrl(edge.url, "dev/hello.txt", Math.floor(Date.now() / 1000) + 60, edge.signingKey);
    const res = await fetch(url, { headers: { range: "bytes=6-" } });
    expect(res.status).toBe(206);
    expect(await res.text()).toBe("edge");
  });

  it("over real HTTP: HEAD keeps Content-Length, a chunked PUT gets 411, ranges stay uncompressed", async () => {
    const body = Buffer.alloc(50_000, "a"); // very compressible, so any compression would show
    const put = await fetch(`${edge.url}/v1/objects/dev/big.txt`, {
      method: "PUT",
      body,
      headers: { authorization: `Bearer ${edge.token}`, "content-type": "text/plain" },
    });
    expect(put.status, await put.text()).toBe(201);
    const url = await signedObjectUrl(edge.url, "dev/big.txt", Math.floor(Date.now() / 1000) + 60, edge.signingKey);
    const head = await request(url, { method: "HEAD" });
    expect(head.statusCode).toBe(200);
    expect(head.headers["content-length"]).toBe("50000");
    await head.body.dump();
    const range = await request(url, { headers: { range: "bytes=100-40099", "accept-encoding": "gzip, br" } });
    expect(range.statusCode).toBe(206);
    expect(range.headers["content-encoding"]).toBe("identity");
    expect(Buffer.from(await range.body.arrayBuffer()).equals(body.subarray(100, 40_100))).toBe(true);
    const whole = await request(url, { headers: { "accept-encoding": "gzip" } });
    expect(whole.headers["content-encoding"]).toBe("identity");
    expect(Buffer.from(await whole.body.arrayBuffer()).equals(body)).toBe(true);
    const chunkedPut =
      "PUT /v1/objects/dev/chunked.bin HTTP/1.1\r\n" +
      `host: ${new URL(edge.url).host}\r\nauthorization: Bearer ${edge.token}\r\n` +
      "transfer-encoding: chunked\r\nconnection: close\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
    // workerd answers before it reads the body and closes the connection with the body unread;
    // under load that close can cut its answer after the head. Every answer must be a 411, and
    // one of a few must arrive whole with its typed error.
    let chunked = "";
    for (let attempt = 0; attempt < 4 && !chunked.includes("\r\n\r\n{"); attempt++) {
      chunked = await rawRequest(edge.url, chunkedPut);
      expect(chunked).toMatch(/^HTTP\/1\.1 411 /);
    }
    expect(chunked).toContain('"code":"ERR_LENGTH_REQUIRED"');
  });

  it("stops: the port no longer answers", async () => {
    const { url } = edge;
    expect(edge.exitStatus()).toBeUndefined();
    await edge.stop();
    await expect(fetch(`${url}/v1/health`)).rejects.toThrow();
    // What a caller reports when the edge is gone: that it exited, and its last words.
    expect(edge.exitStatus()).toBeDefined();
    expect(typeof edge.output()).toBe("string");
  });
});
