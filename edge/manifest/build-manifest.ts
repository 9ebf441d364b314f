import { manifestSigner, signManifest } from "../../common/manifest-sign.js";
import { RESERVED_PREFIX } from "../../common/keys.js";
import { guessKind } from "../../common/media-index/index.js";
import type { ManifestObjectV1, ManifestV1, SignedManifestV1 } from "../../common/schema/index.js";
import { INDEX_ROUTE, OBJECTS_ROUTE, signedUrl } from "../../common/sign.js";
import { BadRequestError, InternalError } from "../errors.js";
import { urlSigning } from "../http/url-signing.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import { DEFAULT_SHARD_TARGET_BYTES, groupShards, MAX_MANIFEST_PAGE } from "../../common/shards.js";

export const MAX_PAGE = MAX_MANIFEST_PAGE;

export interface ManifestPageArgs {
  /** Dataset prefix without a trailing slash, already validated as a key. */
  readonly prefix: string;
  /** Origin of this edge, e.g. "https://edge.example.com"; the signed URLs point at it. */
  readonly edge: string;
  readonly cursor?: string | undefined;
  readonly limit?: number | undefined;
  readonly shardBytes?: number | undefined;
  /** Unix seconds; a parameter so tests can move the clock. */
  readonly now?: number | undefined;
}

function positiveInt(name: string, value: number | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value <= 0 || value > max) {
    throw new BadRequestError(`Expected ${name} as an integer from 1 to ${max} but received ${value}`);
  }
  return value;
}

export function envInt(text: string | undefined, fallback: number): number {
  const n = Number(text);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/**
 * One signed page of a dataset's manifest: one R2 list call (≤ 1000 keys, `_ec/` never
 * included), signed object and index URLs, and virtual shards of ~`shardBytes`.
 *
 * @example
 * const page = await buildManifestPage(env, { prefix: "gameplay", edge: "https://edge.example.com" });
 */
export async function buildManifestPage(env: Env, args: ManifestPageArgs): Promise<SignedManifestV1> {
  const limit = positiveInt("limit", args.limit, MAX_PAGE, MAX_PAGE);
  const shardBytes = positiveInt(
    "shardBytes",
    args.shardBytes,
    envInt(env.EC_SHARD_TARGET_BYTES, DEFAULT_SHARD_TARGET_BYTES),
  );
  const from = args.cursor ? decodeCursor(args.cursor) : undefined;
  const now = args.now ?? Math.floor(Date.now() / 1000);
  const { secret, exp } = urlSigning(env, now);
  const signer = await manifestSigner(env.EC_MANIFEST_KEY).catch((cause: unknown) => {
    throw new InternalError(cause);
  });

  const listed = await env.BUCKET.list({ prefix: `${args.prefix}/`, limit, ...(from ? { cursor: from.r2 } : {}) });
  const visible = listed.objects.filter((o) => !o.key.startsWith(RESERVED_PREFIX));
  const objects: ManifestObjectV1[] = await Promise.all(
    visible.map(async (o) => ({
      key: o.key,
      size: o.size,
      etag: o.httpEtag,
      kind: guessKind(o.key),
      url: await signedUrl(args.edge, OBJECTS_ROUTE, o.key, exp, secret),
      // The etag pins the index to the version listed here; the route refuses any other.
      indexUrl: `${await signedUrl(args.edge, INDEX_ROUTE, o.key, exp, secret)}&etag=${encodeURIComponent(o.httpEtag)}`,
    })),
  );
  const firstShard = from?.shard ?? 0;
  const shards = groupShards(
    objects.map((o) => o.size),
    shardBytes,
    firstShard,
  );
  const manifest: ManifestV1 = {
    version: 1,
    dataset: args.prefix,
    edge: args.edge,
    createdAt: now,
    expiresAt: exp,
    objects,
    shards,
    cursor: listed.truncated ? encodeCursor({ r2: listed.cursor, shard: firstShard + shards.length }) : null,
  };
  return signManifest(manifest, signer);
}
