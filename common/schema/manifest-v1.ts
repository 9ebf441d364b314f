import { z } from "zod";
import { MediaKind } from "./index-v1.js";

export const ManifestObjectV1 = z.object({
  key: z.string(),
  size: z.number().int().nonnegative(),
  etag: z.string(),
  /** Guessed from the key's extension; the object's index says for sure. */
  kind: MediaKind,
  /** Signed GET/HEAD URL of the object's bytes. */
  url: z.string().url(),
  /** Signed URL of the object's index. */
  indexUrl: z.string().url(),
});
export type ManifestObjectV1 = z.infer<typeof ManifestObjectV1>;

/** A virtual shard: a contiguous run of objects (no object is rewritten). */
export const ShardV1 = z.object({
  id: z.number().int().nonnegative(),
  /** Index of the first object of the shard in `objects`, and how many. */
  first: z.number().int().nonnegative(),
  count: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});
export type ShardV1 = z.infer<typeof ShardV1>;

export const ManifestV1 = z.object({
  version: z.literal(1),
  /** The dataset prefix, e.g. "gameplay". */
  dataset: z.string(),
  /** Base URL of the edge that signed it. */
  edge: z.string(),
  createdAt: z.number().int(),
  /** Unix seconds after which the signed URLs stop working. */
  expiresAt: z.number().int(),
  objects: z.array(ManifestObjectV1),
  shards: z.array(ShardV1),
  /** Opaque cursor of the next page, or null on the last page. */
  cursor: z.string().nullable(),
});
export type ManifestV1 = z.infer<typeof ManifestV1>;

/**
 * What the edge returns: the manifest as an exact JSON string plus an Ed25519 signature
 * over its UTF-8 bytes, so any holder of the public key (GET /v1/keys) verifies it offline.
 */
export const SignedManifestV1 = z.object({
  payload: z.string(),
  signature: z.string(),
  keyId: z.string(),
});
export type SignedManifestV1 = z.infer<typeof SignedManifestV1>;

export const PublicKeysV1 = z.object({
  keys: z.array(z.object({ keyId: z.string(), alg: z.literal("Ed25519"), publicKey: z.string() })),
});
export type PublicKeysV1 = z.infer<typeof PublicKeysV1>;
