/**
 * What `ec inspect` reads a dataset through: the edge's signed manifest and index URLs for
 * http(s):// datasets, the bucket itself (listing plus client-built indexes) for r2:// and
 * s3:// ones, and the files for a local directory (an absolute path or file://), as `ec stream`.
 */
import {
  fetchIndex,
  manifestPages,
  parseDatasetUrl,
  type ManifestClientOptions,
} from "../../common/manifest-client.js";
import type { IndexV1 } from "../../common/schema/index.js";
import { guessKind } from "../../common/media-index/index.js";
import { fileURLToPath } from "node:url";
import { LocalDirSource } from "../source/local-dir.js";
import { pinnedKeys, trustedKeys } from "../source/edge-keys.js";
import type { S3Options } from "../source/s3/s3-url.js";
import { isBucketUrl, openBucketSource } from "./bucket-flags.js";

export interface CatalogObject {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
}

export interface Catalog {
  /** The dataset prefix, without a trailing slash ("" for a local directory: keys are relative to it). */
  readonly prefix: string;
  /** What the summary calls the dataset. */
  readonly name: string;
  /** The dataset's objects, a page at a time. */
  pages(): AsyncIterable<readonly CatalogObject[]>;
  index(object: CatalogObject): Promise<IndexV1>;
  close(): Promise<void>;
}

/**
 * @example
 * const catalog = await openCatalog("s3://videos/gameplay", {});
 * for await (const page of catalog.pages()) for (const o of page) console.log((await catalog.index(o)).kind);
 */
export async function openCatalog(
  url: string,
  client: ManifestClientOptions,
  bucket: S3Options = {},
): Promise<Catalog> {
  if (url.startsWith("/") || /^file:\/\//i.test(url)) {
    const source = new LocalDirSource(url.startsWith("/") ? url : fileURLToPath(url));
    return {
      prefix: "",
      name: source.root,
      async *pages() {
        yield (await source.list()).objects;
      },
      index: (o) => source.index({ ...o, kind: guessKind(o.key) }),
      close: () => source.close(),
    };
  }
  if (isBucketUrl(url)) {
    const source = await openBucketSource(url, bucket);
    const prefix = source.bucket.location.prefix.replace(/\/$/, "");
    return {
      prefix,
      name: prefix,
      async *pages() {
        for await (const page of source.bucket.pages()) yield page;
      },
      index: (o) => source.index({ ...o, kind: guessKind(o.key) }),
      close: () => source.close(),
    };
  }
  const { prefix, edge } = parseDatasetUrl(url);
  const indexUrls = new Map<string, string>();
  // Pinned (EC_EDGE_KEYS) or first-seen keys, as open() trusts them.
  const pinned = process.env.EC_EDGE_KEYS ? await pinnedKeys(process.env.EC_EDGE_KEYS, "EC_EDGE_KEYS") : undefined;
  const keys = client.keys ?? trustedKeys(edge, { pinned, fetch: client.fetch });
  Promise.resolve(keys).catch(() => {}); // surfaced where the pages await it
  return {
    prefix,
    name: prefix,
    async *pages() {
      for await (const page of manifestPages(url, { ...client, keys })) {
        for (const o of page.objects) indexUrls.set(o.key, o.indexUrl);
        yield page.objects;
      }
    },
    index: (o) => fetchIndex(indexUrls.get(o.key)!, { ...client, edge }),
    close: async () => {},
  };
}
