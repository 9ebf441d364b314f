/**
 * Datasets served by an ec edge (`http(s)://HOST/v1/datasets/PREFIX`): the signed, verified
 * manifest lists the objects; indexes come from their signed URLs; bytes go through a cache.
 * Signed URLs that expire mid-run are renewed by fetching the manifest again.
 */
import { EcError } from "../../common/errors.js";
import { fetchIndex, fetchManifest, type DatasetManifest } from "../../common/manifest-client.js";
import { ManifestErrorCode } from "../../common/manifest-sign.js";
import type { IndexV1, ManifestObjectV1 } from "../../common/schema/index.js";
import { SdkError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import { inProcessCache, remoteCache, type ByteCache } from "./cache-client.js";
import { assertNotPublicBucketUrl } from "./s3/s3-url.js";
import type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceStats } from "./source.js";

/** Renew signed URLs this long before they expire. */
const RENEW_MARGIN_S = 120;

/** ETags as the edge's HTTP headers carry them ("…" or W/"…") can be pinned by the cache. */
function httpEtag(etag: string): string | undefined {
  return etag.startsWith('"') || etag.startsWith("W/") ? etag : undefined;
}

/**
 * Where the edge's refusal of a signed URL surfaces: the cache's pull (in-process, or relayed
 * by an origin-cache with the edge's status) or the index fetch.
 */
const REFUSED_URL_CODES: ReadonlySet<string> = new Set(["ERR_UPSTREAM_STATUS", ManifestErrorCode.HTTP]);

/** An expired or rejected signature: a 401 or 403 from the edge, by code and status. */
export function isAuthFailure(err: unknown): boolean {
  return err instanceof EcError && REFUSED_URL_CODES.has(err.code) && (err.status === 401 || err.status === 403);
}

export class EdgeSource implements DatasetSource {
  private manifest!: DatasetManifest;
  private urls = new Map<string, ManifestObjectV1>();
  private renewing: Promise<void> | undefined;

  constructor(private readonly datasetUrl: string, private readonly token: string | undefined, private readonly cache: ByteCache) {}

  private async load(): Promise<void> {
    this.manifest = await fetchManifest(this.datasetUrl, { token: this.token });
    this.urls = new Map(this.manifest.objects.map((o) => [o.key, o]));
  }

  /** Fetches the manifest again (once, however many callers ask at the same time). */
  private renew(): Promise<void> {
    this.renewing ??= this.load().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async signed(object: DatasetObject): Promise<ManifestObjectV1> {
    if (this.manifest.expiresAt - Date.now() / 1000 < RENEW_MARGIN_S) await this.renew();
    const o = this.urls.get(object.key);
    if (!o) throw new SdkError("ERR_OBJECT_GONE", `${object.key} is no longer in the dataset's manifest`);
    if (o.etag !== object.etag) throw new SdkError("ERR_ETAG_CHANGED", `${object.key} changed during the run (etag ${object.etag} → ${o.etag})`);
    return o;
  }

  /** Runs `fn` with the object's signed URLs; a 401/403 renews them once and retries. */
  private async withUrls<R>(object: DatasetObject, fn: (o: ManifestObjectV1) => Promise<R>): Promise<R> {
    try {
      return await fn(await this.signed(object));
    } catch (err) {
      if (!isAuthFailure(err)) throw err;
      await this.renew();
      return fn(await this.signed(object));
    }
  }

  async list(): Promise<DatasetListing> {
    await this.load();
    const objects: DatasetObject[] = this.manifest.objects.map((o) => ({ key: o.key, size: o.size, etag: o.etag, kind: o.kind }));
    const shards = this.manifest.shards.map((s) => ({ objects: Array.from({ length: s.count }, (_, i) => s.first + i) }));
    return { objects, shards };
  }

  index(object: DatasetObject): Promise<IndexV1> {
    return this.withUrls(object, (o) => fetchIndex(o.indexUrl));
  }

  read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    return this.withUrls(object, (o) => this.cache.read(o.url, offset, length, httpEtag(o.etag)));
  }

  plan(ranges: readonly PlannedRange[]): void {
    const out = [];
    for (const r of ranges) {
      const o = this.urls.get(r.object.key);
      if (o) out.push({ url: o.url, offset: r.offset, length: r.length });
    }
    if (out.length > 0) this.cache.plan(out);
  }

  stats(): SourceStats {
    return this.cache.stats();
  }

  async close(): Promise<void> {
    await this.cache.close();
  }
}

/** The source for http: and https: dataset URLs. */
export async function edgeSource(url: URL, o: ResolvedOptions): Promise<DatasetSource> {
  // A public r2.dev URL is no edge: say so, instead of failing on its manifest route.
  assertNotPublicBucketUrl(url);
  const cache = o.cache ? await remoteCache(o.cache, o.rank) : await inProcessCache(url.origin, o.cacheBytes);
  return new EdgeSource(url.href, o.token, cache);
}
