import { tableRoot } from "../../common/dataset-table/entry.js";
import { RESERVED_PREFIX } from "../../common/keys.js";
import { MAX_MANIFEST_PAGE } from "../../common/shards.js";
import {
  type EnqueuePageV1,
  type IndexMessageV1,
  SignRequestV1,
  type SignedUrlsV1,
  type SignedManifestV1,
} from "../../common/schema/index.js";
import { INDEX_ROUTE, OBJECTS_ROUTE, signedUrl } from "../../common/sign.js";
import { BadRequestError, EdgeError, NotFoundError } from "../errors.js";
import { urlSigning } from "../http/url-signing.js";
import { readHead } from "./publish.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import { FRAME_HEADER, frameHeader, PAGE_NAME } from "../../common/dataset-table/page-frames.js";

/** 404: the dataset's root has no table (yet, or at that generation); clients fall back to the manifest. */
export class TableMissingError extends EdgeError {
  constructor(root: string, generation: number | undefined) {
    super(
      "ERR_TABLE_MISSING",
      404,
      generation === undefined
        ? `No dataset table for ${JSON.stringify(root)} yet`
        : `No generation ${generation} of the dataset table for ${JSON.stringify(root)}`,
    );
    this.name = "TableMissingError";
  }
}

/** The signed head of the table a prefix is planned from (its root's), latest or pinned. */
export async function tableHead(env: Env, prefix: string, generation?: number): Promise<SignedManifestV1> {
  const root = tableRoot(`${prefix}/`)!;
  const found = await readHead(env, root, generation);
  if (!found) throw new TableMissingError(root, generation);
  return found.signed;
}

/**
 * A stored page, or (`part: "pins"`) its pins, still gzip: served as stored (the head's digests
 * cover their bytes).
 */
export async function tablePageBody(
  env: Env,
  prefix: string,
  name: string,
  part: "page" | "pins" = "page",
): Promise<ReadableStream | undefined> {
  if (!PAGE_NAME.test(name)) return undefined;
  const got = await env.BUCKET.get(tableKeys[part](tableRoot(`${prefix}/`)!, name));
  return got?.body;
}

/**
 * Several stored pages (or, `part: "pins"`, their pins) in one body
 * (common/dataset-table/page-frames.ts: each one's stored gzip bytes after its 4-byte length,
 * in the order asked), read from R2 in parallel. A name
 * the table does not hold is 404 for the whole request, naming it.
 *
 * @example
 * await tablePagesBody(env, "gameplay", ["7-0", "7-1"]); // Uint8Array: [len][gzip][len][gzip]
 */
export async function tablePagesBody(
  env: Env,
  prefix: string,
  names: readonly string[],
  part: "page" | "pins" = "page",
): Promise<Uint8Array> {
  const root = tableRoot(`${prefix}/`)!;
  const pages = await Promise.all(
    names.map(async (name) => {
      const got = await env.BUCKET.get(tableKeys[part](root, name));
      if (got === null)
        throw new NotFoundError(`No table ${part === "pins" ? "pins of page" : "page"} ${JSON.stringify(name)}`);
      return new Uint8Array(await got.arrayBuffer());
    }),
  );
  const body = new Uint8Array(pages.reduce((n, p) => n + FRAME_HEADER + p.byteLength, 0));
  let at = 0;
  for (const page of pages) {
    body.set(frameHeader(page.byteLength), at);
    body.set(page, at + FRAME_HEADER);
    at += FRAME_HEADER + page.byteLength;
  }
  return body;
}

/**
 * Signed object and index URLs (the index pinned to the given etag) for objects under the
 * prefix, for a client that planned from the table and so holds no manifest.
 *
 * @example
 * await signUrls(env, { prefix: "gameplay", edge: "https://edge.example.com", body: { objects: [{ key: "gameplay/a.mp4", etag: '"9e1f"' }] } });
 */
export async function signUrls(
  env: Env,
  args: { prefix: string; edge: string; body: unknown; now?: number },
): Promise<SignedUrlsV1> {
  const parsed = SignRequestV1.safeParse(args.body);
  if (!parsed.success)
    throw new BadRequestError(
      `Expected { objects: [{ key, etag }] } of 1 to 1000 objects but received ${parsed.error.issues[0]?.message ?? "something else"}`,
    );
  const { secret, exp } = urlSigning(env, args.now ?? Math.floor(Date.now() / 1000));
  const stray = parsed.data.objects.find(
    (o) => !o.key.startsWith(`${args.prefix}/`) || o.key.startsWith(RESERVED_PREFIX),
  );
  if (stray)
    throw new BadRequestError(
      `Expected keys under ${JSON.stringify(`${args.prefix}/`)} but received ${JSON.stringify(stray.key)}`,
    );
  const objects = await Promise.all(
    parsed.data.objects.map(async (o) => ({
      key: o.key,
      url: await signedUrl(args.edge, OBJECTS_ROUTE, o.key, exp, secret),
      indexUrl: `${await signedUrl(args.edge, INDEX_ROUTE, o.key, exp, secret)}&etag=${encodeURIComponent(o.etag)}`,
    })),
  );
  return { expiresAt: exp, objects };
}

/** Queues take at most 100 messages per sendBatch call. */
const SEND_BATCH = 100;

/**
 * Enqueues one listing page (≤ 1000 keys, one R2 list call, ten sendBatch calls) of a prefix
 * for background indexing: `ec index` walks a bucket filled before the edge was deployed.
 *
 * @example
 * let page = await enqueuePrefix(env, { prefix: "gameplay" }); // { enqueued: 1000, cursor: "…" }
 */
export async function enqueuePrefix(
  env: Env,
  args: { prefix: string; cursor?: string | undefined },
): Promise<EnqueuePageV1> {
  const listed = await env.BUCKET.list({
    prefix: `${args.prefix}/`,
    limit: MAX_MANIFEST_PAGE,
    ...(args.cursor ? { cursor: args.cursor } : {}),
  });
  const messages = listed.objects.map((o) => ({
    body: { type: "index", key: o.key, etag: o.httpEtag } satisfies IndexMessageV1,
  }));
  for (let i = 0; i < messages.length; i += SEND_BATCH)
    await env.INDEX_QUEUE.sendBatch(messages.slice(i, i + SEND_BATCH));
  return { enqueued: messages.length, cursor: listed.truncated ? listed.cursor : null };
}
