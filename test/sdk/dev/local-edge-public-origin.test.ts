import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManifestV1, SignedManifestV1 } from "../../../common/schema/index.js";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";

// A front (TLS proxy, WAN emulator) before the edge must get signed URLs that lead through it.
describe("startLocalEdge with publicOrigin", () => {
  const front = "https://127.0.0.1:9443";
  let dir: string;
  let edge: LocalEdge;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ec-local-edge-origin-"));
    edge = await startLocalEdge({
      port: 0,
      quiet: true,
      varsDir: dir,
      persistDir: join(dir, "r2"),
      publicOrigin: front,
    });
  });

  afterAll(async () => {
    await edge?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("signs the manifest's object and index URLs for the public origin, not the listening one", async () => {
    const put = await fetch(`${edge.url}/v1/objects/ds/a.bin`, {
      method: "PUT",
      body: "bytes",
      headers: { authorization: `Bearer ${edge.token}` },
    });
    expect(put.status).toBe(201);
    const res = await fetch(`${edge.url}/v1/datasets/ds/manifest`, {
      headers: { authorization: `Bearer ${edge.token}` },
    });
    expect(res.status).toBe(200);
    const page = ManifestV1.parse(JSON.parse(SignedManifestV1.parse(await res.json()).payload));
    expect(page.edge).toBe(front);
    expect(page.objects.map((o) => [new URL(o.url).origin, new URL(o.indexUrl).origin])).toEqual([[front, front]]);
  });
});
