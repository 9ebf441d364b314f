/**
 * Trusting an edge's manifest keys against a real local edge: `ec keys` prints what open()'s
 * `edgeKeys` pins; a pin of another key refuses the edge; without a pin the keys first seen are
 * remembered, and the same origin answering with another key (the edge restarted with a fresh
 * EC_MANIFEST_KEY, as a forger would) is refused with ERR_MANIFEST_KEY_CHANGED until accepted.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manifestSigner } from "../../../common/manifest-sign.js";
import { main as keysCli } from "../../../sdk/cli/keys.js";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { open, type OpenOptions } from "../../../sdk/index.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { uploadBytes } from "../../helpers/edge-upload.js";
import { makeVideo } from "../../helpers/make-video.js";

let dir: string;
let edge: LocalEdge;
let dataset: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-edge-keys-e2e-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: join(dir, "a"), persistDir: join(dir, "r2") });
  const video = await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 12, gop: 4 });
  edge = await started;
  dataset = `${edge.url}/v1/datasets/keys`;
  await uploadBytes(edge, "keys/a.mp4", new Uint8Array(await readFile(video)));
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function clips(options: OpenOptions): Promise<number> {
  const ds = await open(dataset, { token: edge.token, device: "cpu", frames: 4, ...options });
  let n = 0;
  try {
    for await (const b of ds) n += b.clips.length;
  } finally {
    await ds.close();
  }
  return n;
}

describe("an edge's manifest keys, pinned or first seen", () => {
  it("`ec keys URL` prints the key the edge signs with, and open() streams with it pinned", async () => {
    const out = await captureOutput(() => keysCli([dataset, "--json"]));
    expect(out.code, out.err).toBe(0);
    const printed = JSON.parse(out.out) as { edge: string; keys: { publicKey: string }[]; env: string };
    const signer = await manifestSigner(edge.manifestKey);
    expect(printed.edge).toBe(edge.url);
    expect(printed.keys.map((k) => k.publicKey)).toEqual([signer.publicKey]);
    expect(printed.env).toBe(`EC_EDGE_KEYS=${signer.publicKey}`);
    expect(await clips({ edgeKeys: [signer.publicKey] })).toBe(3);
  }, 120_000);

  it("a pin of another key refuses the edge's manifest (ERR_MANIFEST_UNKNOWN_KEY)", async () => {
    const other = await manifestSigner(
      generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
    );
    await expect(clips({ edgeKeys: [other.publicKey] })).rejects.toMatchObject({
      code: "ERR_MANIFEST_UNKNOWN_KEY",
    });
  }, 120_000);

  it("first use remembers the keys; the origin answering with another key is ERR_MANIFEST_KEY_CHANGED until accepted", async () => {
    const known = join(dir, "known-edges.json");
    const previous = process.env.EC_KNOWN_EDGES;
    process.env.EC_KNOWN_EDGES = known;
    try {
      expect(await clips({})).toBe(3);
      const firstKey = edge.manifestKey;
      const first = await manifestSigner(firstKey);
      expect(JSON.parse(await readFile(known, "utf8")).edges[edge.url].keys).toEqual([first.publicKey]);

      // The same address, the same bucket, another manifest key.
      const port = Number(new URL(edge.url).port);
      await edge.stop();
      edge = await startLocalEdge({ port, quiet: true, varsDir: join(dir, "b"), persistDir: join(dir, "r2") });
      expect(edge.manifestKey).not.toBe(firstKey);
      const err = await clips({}).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "ERR_MANIFEST_KEY_CHANGED" });
      expect((err as Error).message).toContain(`ec keys ${edge.url} --accept`);

      const accepted = await captureOutput(() => keysCli([edge.url, "--accept"]));
      expect(accepted.code, accepted.err).toBe(0);
      expect(await clips({})).toBe(3);
    } finally {
      process.env.EC_KNOWN_EDGES = previous;
    }
  }, 240_000);
});
