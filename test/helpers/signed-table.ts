import { generateKeyPairSync } from "node:crypto";
import { buildGeneration } from "../../common/dataset-table/generation.js";
import { manifestSigner, type ManifestSigner } from "../../common/manifest-sign.js";
import type { TableEntryV1 } from "../../common/schema/index.js";

/** A video entry of root `d/` as the indexer writes one: 24 frames, a keyframe every 6. */
export const videoEntry = (i: number): TableEntryV1 => ({
  key: `d/o-${String(i).padStart(4, "0")}.mp4`,
  size: 100 + i,
  etag: `"e${i}"`,
  kind: "video",
  frames: 24,
  keyframes: [0, 6, 12, 18],
});

/** A fresh Ed25519 signer, as an edge's EC_MANIFEST_KEY makes one. */
export async function freshSigner(): Promise<ManifestSigner> {
  return manifestSigner(
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  );
}

/** One generation of `entries` under root `d`, in pages of `pageTarget` entries, and a signer for its head. */
export async function tableGeneration(entries: readonly TableEntryV1[], pageTarget: number) {
  const signer = await freshSigner();
  const generation = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: "d",
    shardBytes: 1 << 20,
    now: 0,
    pageTarget,
  });
  return { signer, ...generation };
}
