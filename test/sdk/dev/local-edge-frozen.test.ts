import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedObjectUrl } from "../../../common/sign.js";
import type { LocalEdge, LocalEdgeOptions } from "../../../sdk/dev/index.js";
import { projectRoot } from "../../../sdk/dev/project-root.js";

/**
 * wrangler dev rebuilds and restarts workerd when a file its bundle read changes, and answers an
 * upload in flight across the restart with 503 "Your worker restarted mid-request". The bench's
 * edge runs from a working tree that is edited while it seeds, so a local edge with its own vars
 * folder must keep the Worker it started with. The edits here go to a scratch copy of the tree
 * (its own package.json, edge/, common/ and sdk/dev/), never to the checkout other tests build.
 */
describe("startLocalEdge with a vars folder of its own", () => {
  let scratch: string;
  let dir: string;
  let edge: LocalEdge;

  beforeAll(async () => {
    const root = projectRoot();
    scratch = mkdtempSync(join(tmpdir(), "ec-frozen-tree-"));
    for (const name of [
      "package.json",
      "wrangler.toml",
      "tsconfig.base.json",
      "edge",
      "common",
      "sdk/errors.ts",
      "sdk/dev",
    ])
      cpSync(join(root, name), join(scratch, name), { recursive: true });
    symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"), "dir");
    const { startLocalEdge } = (await import(join(scratch, "sdk/dev/local-edge.ts"))) as {
      startLocalEdge(opts: LocalEdgeOptions): Promise<LocalEdge>;
    };
    dir = join(scratch, "vars");
    edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  });

  afterAll(async () => {
    await edge?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("keeps its Worker, and an upload in flight, across edits of the sources and the config", async () => {
    const health = async () => (await (await fetch(`${edge.url}/v1/health`)).json()) as unknown;
    expect(await health()).toEqual({ ok: true });
    const piece = 256 * 1024;
    const pieces = 24;
    const body = Buffer.alloc(piece * pieces);
    for (let i = 0; i < body.length; i += 4) body.writeUInt32LE(i, i);
    // Streamed over ~4 s, so that a rebuild and restart would land while it is in flight.
    const slow = Readable.from(
      (async function* () {
        for (let i = 0; i < pieces; i++) {
          await sleep(160);
          yield body.subarray(i * piece, (i + 1) * piece);
        }
      })(),
    );
    const put = request(`${edge.url}/v1/objects/dev/frozen.bin`, {
      method: "PUT",
      body: slow,
      headers: {
        authorization: `Bearer ${edge.token}`,
        "content-length": String(body.length),
        "content-type": "application/octet-stream",
      },
    });
    await sleep(500);
    const route = join(scratch, "edge", "routes", "health.ts");
    const source = readFileSync(route, "utf8");
    expect(source).toContain("c.json({ ok: true })");
    writeFileSync(route, source.replace("c.json({ ok: true })", 'c.json({ ok: true, edited: "source" })'));
    appendFileSync(join(dir, "wrangler.toml"), "\n# edited while the edge runs\n");
    const res = await put;
    expect(res.statusCode, await res.body.text()).toBe(201);
    // An edit the edge picked up would show here within a few seconds; it keeps answering as it started.
    for (let i = 0; i < 10; i++) {
      expect(await health()).toEqual({ ok: true });
      await sleep(400);
    }
    const url = await signedObjectUrl(edge.url, "dev/frozen.bin", Math.floor(Date.now() / 1000) + 60, edge.signingKey);
    const tail = await request(url, { headers: { range: `bytes=${body.length - 8}-` } });
    expect(tail.statusCode).toBe(206);
    expect(Buffer.from(await tail.body.arrayBuffer()).equals(body.subarray(body.length - 8))).toBe(true);
  });
});
