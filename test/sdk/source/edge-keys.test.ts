import { generateKeyPairSync } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManifestErrorCode, manifestSigner, publicKeys, signManifest } from "../../../common/manifest-sign.js";
import type { ManifestV1 } from "../../../common/schema/index.js";
import { main as keysCli } from "../../../sdk/cli/keys.js";
import { resolveOptions } from "../../../sdk/options.js";
import { inProcessCache } from "../../../sdk/source/cache-client.js";
import { EdgeSource } from "../../../sdk/source/edge-source.js";
import { knownEdgesPath, trustedKeys } from "../../../sdk/source/edge-keys.js";
import { captureOutput } from "../../helpers/capture-output.js";

const pkcs8 = () =>
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64");
const GENUINE = pkcs8();
const FORGER = pkcs8();
const TOKEN = "t";

/** The key the edge signs with now: the genuine one, or a forger who took over its address. */
let signing = GENUINE;
let server: Server;
let base: string;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-edge-keys-"));
  server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url!, base);
      res.setHeader("content-type", "application/json");
      if (url.pathname === "/v1/keys") return res.end(JSON.stringify(publicKeys([await manifestSigner(signing)])));
      if (url.pathname === "/v1/datasets/ds/table") {
        res.statusCode = 404;
        return res.end(JSON.stringify({ error: { code: "ERR_TABLE_MISSING", message: "none" } }));
      }
      if (url.pathname === "/v1/datasets/ds/manifest") {
        const now = Math.floor(Date.now() / 1000);
        const page: ManifestV1 = {
          version: 1,
          dataset: "ds",
          edge: base,
          createdAt: now,
          expiresAt: now + 600,
          objects: [
            {
              key: "ds/a.mp4",
              size: 10,
              etag: '"e"',
              kind: "video",
              url: `${base}/v1/objects/ds/a.mp4?exp=1&sig=x`,
              indexUrl: `${base}/v1/index/ds/a.mp4?exp=1&sig=x`,
            },
          ],
          shards: [{ id: 0, first: 0, count: 1, bytes: 10 }],
          cursor: null,
        };
        return res.end(JSON.stringify(await signManifest(page, await manifestSigner(signing))));
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { code: "ERR_NOT_FOUND", message: "no route" } }));
    })();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

async function list(opts: ConstructorParameters<typeof EdgeSource>[3]) {
  const source = new EdgeSource(`${base}/v1/datasets/ds`, TOKEN, await inProcessCache(base, 1 << 20), opts);
  try {
    return await source.list();
  } finally {
    await source.close();
  }
}

const publicKeyOf = async (pkcs: string) => (await manifestSigner(pkcs)).publicKey;

describe("edge keys: pinned, or trusted on first use", () => {
  it("remembers the keys first seen (file 0600) and refuses other keys later with ERR_MANIFEST_KEY_CHANGED", async () => {
    const knownEdges = join(dir, "tofu", "known-edges.json");
    signing = GENUINE;
    expect((await list({ knownEdges })).objects).toHaveLength(1);
    expect((await stat(knownEdges)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(knownEdges, "utf8")).edges[base].keys).toEqual([await publicKeyOf(GENUINE)]);

    // Someone answering in the edge's name, with keys and manifests that agree with each other.
    signing = FORGER;
    const err = await list({ knownEdges }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "ManifestError", code: ManifestErrorCode.KEY_CHANGED });
    expect((err as Error).message).toContain(`ec keys ${base} --accept`);

    // The edge rotated for real: `ec keys URL --accept` takes the new keys, and the stream goes on.
    const env = process.env.EC_KNOWN_EDGES;
    process.env.EC_KNOWN_EDGES = knownEdges;
    try {
      const out = await captureOutput(() => keysCli([base, "--accept", "--json"]));
      expect(out.code, out.err).toBe(0);
      expect(JSON.parse(out.out).keys.map((k: { publicKey: string }) => k.publicKey)).toEqual([
        await publicKeyOf(FORGER),
      ]);
    } finally {
      process.env.EC_KNOWN_EDGES = env;
    }
    expect((await list({ knownEdges })).objects).toHaveLength(1);
    signing = GENUINE;
  });

  it("pinned keys (edgeKeys, EC_EDGE_KEYS) refuse a forger whatever /v1/keys says, and take several keys", async () => {
    const knownEdges = join(dir, "pinned", "known-edges.json");
    const genuine = await publicKeyOf(GENUINE);
    const rotated = await publicKeyOf(pkcs8());
    const o = resolveOptions({}, { EC_EDGE_KEYS: `${rotated}, ${genuine}` });
    expect(o.edgeKeys).toEqual([rotated, genuine]);
    const pinned = await trustedKeys(base, { pinned: publicKeys([await manifestSigner(GENUINE)]) });

    signing = FORGER;
    await expect(list({ knownEdges, edgeKeys: pinned })).rejects.toMatchObject({
      code: ManifestErrorCode.UNKNOWN_KEY,
    });
    signing = GENUINE;
    expect((await list({ knownEdges, edgeKeys: pinned })).objects).toHaveLength(1);
    // Pinned keys are not remembered: nothing was trusted on first use.
    await expect(stat(knownEdges)).rejects.toMatchObject({ code: "ENOENT" });
    expect(() => resolveOptions({ edgeKeys: ["not-a-key"] })).toThrow(
      expect.objectContaining({ code: "ERR_INVALID_OPTION", message: expect.stringContaining("edgeKeys") }),
    );
  });

  it("ranks that first open an edge at once leave one whole file", async () => {
    const knownEdges = join(dir, "ranks", "known-edges.json");
    signing = GENUINE;
    const got = await Promise.all(Array.from({ length: 16 }, () => trustedKeys(base, { path: knownEdges })));
    for (const k of got) expect(k.keys.map((e) => e.publicKey)).toEqual([await publicKeyOf(GENUINE)]);
    expect(JSON.parse(await readFile(knownEdges, "utf8")).edges[base].keys).toEqual([await publicKeyOf(GENUINE)]);
  });

  it("a known-edges file that is not one is a typed error, never a silent first use", async () => {
    const knownEdges = join(dir, "torn", "known-edges.json");
    await mkdir(join(dir, "torn"), { recursive: true });
    await writeFile(knownEdges, '{"version":1,"edges":{');
    await expect(trustedKeys(base, { path: knownEdges })).rejects.toMatchObject({
      code: ManifestErrorCode.INVALID,
      message: expect.stringContaining("move it away"),
    });
  });

  it("the file lives under XDG_CONFIG_HOME, else ~/.config", () => {
    expect(knownEdgesPath({ XDG_CONFIG_HOME: "/x" })).toBe("/x/ec/known-edges.json");
    expect(knownEdgesPath({ HOME: "/home/a" })).toBe("/home/a/.config/ec/known-edges.json");
  });
});
