/**
 * Datasets served by an ec edge (`http(s)://HOST/v1/datasets/PREFIX`). Where the edge keeps a
 * dataset table, the table lists the objects and signed URLs are asked for lazily, in
 * batches, for the objects the pipeline is about to read; otherwise the signed, verified
 * manifest lists them. Indexes come from their signed URLs; bytes go through a cache.
 * Signed URLs that expire mid-run are renewed.
 */
import { EcError } from "../../common/errors.js";
import type { EntryColumns } from "../../common/dataset-table/entry-columns.js";
import { tableShards } from "../../common/dataset-table/listing.js";
import { fetchIndex, fetchManifest, type DatasetManifest } from "../../common/manifest-client.js";
import { ManifestErrorCode } from "../../common/manifest-sign.js";
import type { IndexV1, ManifestObjectV1, PublicKeysV1 } from "../../common/schema/index.js";
import { LazyTable } from "../../common/lazy-table.js";
import {
  edgeTableStore,
  fetchSignedUrls,
  fetchTable,
  type ReadHead,
  recordingHeads,
} from "../../common/table-client.js";
import { ResumeError, SdkError } from "../errors.js";
import { inProcessCache, remoteCache, type ByteCache, type PlanRange } from "./cache-client.js";
import { edgeFetch, type EdgeFetch } from "./edge-fetch.js";
import { pinnedKeys, trustedKeys } from "./edge-keys.js";
import { inflatePage, pageDigest } from "./page-check.js";
import { assertNotPublicBucketUrl } from "./s3/s3-url.js";
import type {
  DatasetListing,
  DatasetObject,
  DatasetSource,
  PlannedRange,
  SourceOptions,
  SourceStats,
} from "./source.js";

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
const REFUSED_URL_CODES: ReadonlySet<string> = new Set([
  "ERR_UPSTREAM_STATUS",
  // The cache's own refusal of a URL past its `exp`, made without asking the edge.
  "ERR_SIGNATURE_EXPIRED",
  ManifestErrorCode.HTTP,
]);

/** An expired or rejected signature: a 401 or 403 from the edge, by code and status. */
export function isAuthFailure(err: unknown): boolean {
  return err instanceof EcError && REFUSED_URL_CODES.has(err.code) && (err.status === 401 || err.status === 403);
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((y, n) => ((resolve = y), (reject = n)));
  return { promise, resolve, reject };
}

/**
 * The etag of `object` in a table's entries (its own entry where the table made it, else found by
 * key): no map of the whole listing is built at open; the pins of its page are fetched first
 * where the page keeps them apart.
 */
async function listedEtag(entries: EntryColumns, object: DatasetObject): Promise<string | undefined> {
  const i = entries.entryOf(object);
  if (i === undefined) return undefined;
  await entries.pinsReady(i);
  return entries.etag(i);
}

/** Objects per POST /urls: the edge signs at most 1000 at once. */
const SIGN_BATCH = 1000;

export class EdgeSource implements DatasetSource {
  private manifest: DatasetManifest | undefined;
  private urls = new Map<string, ManifestObjectV1>();
  private renewing: Promise<void> | undefined;
  /** Table mode: the listed objects (in key order, searched by key), and the URL requests waiting for the next batch. */
  private listed: EntryColumns | undefined;
  /** Lazy table mode: the table whose pages are read as asked for (`listLazy`). */
  private lazy: LazyTable | undefined;
  /** The head `listLazy` read, for the `list` that follows it. */
  private readHead: ReadHead | undefined;
  private expiresAt = 0;
  private waiting = new Map<string, { object: DatasetObject; done: Deferred }>();
  private signing = new Map<string, Promise<void>>();
  /**
   * Table head, pages, signed URLs and indexes over one HTTP/2 connection: an index on a
   * connection of its own paid a TLS handshake (two more round trips) on the cold path's first
   * clips, between the signed URLs and the first plan.
   */
  private readonly control: EdgeFetch;

  /**
   * Whether a plan reached the cache yet: until then each object whose index is fetched is
   * pinned at the cache at the same time, so the cache's probe of it runs beside the index fetch
   * instead of after the first plan (later plans run far enough ahead to hide the probe).
   */
  private planned = false;

  /** The edge's origin: every URL taken from it must be of it. */
  private readonly edge: string;
  /** The keys its manifests and table heads must be signed with, asked for once. */
  private trusted: Promise<PublicKeysV1> | undefined;

  /**
   * `table: false` always lists through the manifest (benchmarks and tests compare both);
   * `edgeKeys`: pinned keys (else trusted on first use, edge-keys.ts); `knownEdges`: the file
   * of keys first seen (default: under the user's config folder); `control`: the fetch of the
   * control requests (default: edgeFetch(); tests count what goes through it).
   */
  constructor(
    private readonly datasetUrl: string,
    private readonly token: string | undefined,
    private readonly cache: ByteCache,
    private readonly opts: {
      readonly table?: boolean;
      readonly edgeKeys?: PublicKeysV1 | undefined;
      readonly knownEdges?: string | undefined;
      readonly control?: EdgeFetch;
    } = {},
  ) {
    this.edge = new URL(datasetUrl).origin;
    this.control = opts.control ?? edgeFetch();
  }

  private keys(): Promise<PublicKeysV1> {
    if (!this.trusted) {
      this.trusted = trustedKeys(this.edge, {
        pinned: this.opts.edgeKeys,
        path: this.opts.knownEdges,
        fetch: this.control.fetch,
      });
      // A failure is surfaced where the keys are awaited; the next open asks again.
      this.trusted.catch(() => (this.trusted = undefined));
    }
    return this.trusted;
  }

  private async load(): Promise<void> {
    this.manifest = await fetchManifest(this.datasetUrl, { token: this.token, keys: this.keys() });
    this.expiresAt = this.manifest.expiresAt;
    this.urls = new Map(this.manifest.objects.map((o) => [o.key, o]));
  }

  /** Fetches the manifest again, or forgets the table's signed URLs (once, however many callers ask at the same time). */
  private renew(): Promise<void> {
    if (this.listed || this.lazy) {
      this.urls.clear();
      this.expiresAt = 0;
      return Promise.resolve();
    }
    this.renewing ??= this.load().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  /** Table mode: the object's signed URLs, asked for together with every other object wanted in the same tick. */
  private signLater(object: DatasetObject): Promise<void> {
    const inFlight = this.signing.get(object.key);
    if (inFlight) return inFlight;
    let entry = this.waiting.get(object.key);
    if (!entry) {
      entry = { object, done: deferred() };
      this.waiting.set(object.key, entry);
      if (this.waiting.size === 1) setImmediate(() => this.flush());
      this.signing.set(object.key, entry.done.promise);
      entry.done.promise.then(
        () => this.signing.delete(object.key),
        () => this.signing.delete(object.key),
      );
    }
    return entry.done.promise;
  }

  private flush(): void {
    const batch = [...this.waiting.values()];
    this.waiting = new Map();
    for (let i = 0; i < batch.length; i += SIGN_BATCH) {
      const part = batch.slice(i, i + SIGN_BATCH);
      fetchSignedUrls(
        this.datasetUrl,
        part.map((w) => ({ key: w.object.key, etag: w.object.etag })),
        { token: this.token, fetch: this.control.fetch },
      ).then(
        (signed) => {
          for (const [j, o] of signed.objects.entries())
            this.urls.set(o.key, {
              ...o,
              size: part[j]!.object.size,
              etag: part[j]!.object.etag,
              kind: part[j]!.object.kind,
            });
          this.expiresAt = this.expiresAt === 0 ? signed.expiresAt : Math.min(this.expiresAt, signed.expiresAt);
          for (const w of part) w.done.resolve();
        },
        (err: unknown) => {
          for (const w of part) w.done.reject(err);
        },
      );
    }
  }

  private async signed(object: DatasetObject): Promise<ManifestObjectV1> {
    if (this.urls.has(object.key) && this.expiresAt - Date.now() / 1000 < RENEW_MARGIN_S) await this.renew();
    if ((this.listed || this.lazy) && !this.urls.has(object.key)) {
      const etag = this.lazy ? await this.lazy.etagOf(object) : await listedEtag(this.listed!, object);
      if (etag !== object.etag)
        throw new SdkError("ERR_OBJECT_GONE", `${object.key} is not in the dataset table as listed`);
      await this.signLater(object);
    }
    const o = this.urls.get(object.key);
    if (!o) throw new SdkError("ERR_OBJECT_GONE", `${object.key} is no longer in the dataset's manifest`);
    if (o.etag !== object.etag)
      throw new SdkError("ERR_ETAG_CHANGED", `${object.key} changed during the run (etag ${object.etag} → ${o.etag})`);
    return o;
  }

  /** Runs `fn` with the object's signed URLs; a 401/403 renews them once and retries. */
  private async withUrls<R>(object: DatasetObject, fn: (o: ManifestObjectV1) => Promise<R>): Promise<R> {
    // Its page's pins (the etags a table keeps apart) before anything reads object.etag.
    await (this.lazy ?? this.listed)?.objectPinned(object);
    try {
      return await fn(await this.signed(object));
    } catch (err) {
      if (!isAuthFailure(err)) throw err;
      await this.renew();
      return fn(await this.signed(object));
    }
  }

  async list(opts: { readonly generation?: number | undefined } = {}): Promise<DatasetListing> {
    // Listed whole: objects come from this listing, not from a table read lazily before (too small for it).
    this.lazy = undefined;
    const head = this.readHead;
    this.readHead = undefined;
    const table =
      this.opts.table === false
        ? undefined
        : await fetchTable(this.datasetUrl, {
            token: this.token,
            keys: this.keys(),
            generation: opts.generation,
            fetch: this.control.fetch,
            inflate: inflatePage,
            digest: pageDigest,
            head,
          });
    if (table) {
      // The columns are the object list: each object is made when the pipeline asks for it.
      this.listed = table.entries;
      const shards = tableShards(table.entries.columns.size, table.head.shardBytes).map((s) => ({
        objects: Array.from({ length: s.count }, (_, i) => s.first + i),
      }));
      return {
        objects: table.entries,
        shards,
        entries: table.entries,
        generation: table.head.generation,
        digest: table.digest,
      };
    }
    if (opts.generation !== undefined && this.opts.table !== false) {
      throw new ResumeError(
        "ERR_RESUME_MISMATCH",
        `Expected generation ${opts.generation} of the dataset table (the checkpoint's) but the edge has none for this dataset (never published, or older than the edge's retention)`,
      );
    }
    await this.load();
    const manifest = this.manifest!;
    const objects: DatasetObject[] = manifest.objects.map((o) => ({
      key: o.key,
      size: o.size,
      etag: o.etag,
      kind: o.kind,
    }));
    const shards = manifest.shards.map((s) => ({ objects: Array.from({ length: s.count }, (_, i) => s.first + i) }));
    const notice = new SdkError(
      "ERR_TABLE_MISSING",
      `No dataset table for ${this.datasetUrl} yet (indexing still running, or never started: run \`ec index\`); planning from every object's index, which grows with the dataset`,
    );
    return this.opts.table === false ? { objects, shards } : { objects, shards, notice };
  }

  /**
   * The dataset's table read lazily (latest generation, or `generation`): its head and the
   * page range under the prefix now, each page when asked for; signed URLs are then asked for
   * objects of the pages read. Undefined where the edge has no table for the dataset.
   *
   * @example
   * const table = await source.listLazy();
   * const first = await table?.page(0);
   */
  async listLazy(opts: { readonly generation?: number | undefined } = {}): Promise<LazyTable | undefined> {
    if (this.opts.table === false) return undefined;
    const keys = await this.keys();
    const { store, prefix } = edgeTableStore(this.datasetUrl, {
      token: this.token,
      keys,
      fetch: this.control.fetch,
      inflate: inflatePage,
    });
    // A table too small to read lazily (or none) is listed whole next: from the head read here.
    const recorded = recordingHeads(store, (read) => (this.readHead = read));
    const table = await LazyTable.open(recorded, Promise.resolve(keys), prefix, opts.generation, pageDigest);
    if (table) this.lazy = table;
    return table;
  }

  index(object: DatasetObject): Promise<IndexV1> {
    return this.withUrls(object, (o) => {
      if (!this.planned) {
        const etag = httpEtag(o.etag);
        this.cache.pin?.([etag === undefined ? { url: o.url } : { url: o.url, etag }]);
      }
      return fetchIndex(o.indexUrl, { edge: this.edge, fetch: this.control.fetch });
    });
  }

  read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    return this.withUrls(object, (o) => this.cache.read(o.url, offset, length, httpEtag(o.etag)));
  }

  plan(ranges: readonly PlannedRange[]): void {
    const out: PlanRange[] = [];
    for (const r of ranges) {
      const o = this.urls.get(r.object.key);
      if (!o) continue;
      const etag = httpEtag(o.etag);
      const range = { url: o.url, offset: r.offset, length: r.length, size: r.object.size };
      out.push(etag === undefined ? range : { ...range, etag });
    }
    if (out.length === 0) return;
    this.planned = true;
    this.cache.plan(out);
  }

  stats(): SourceStats {
    return this.cache.stats();
  }

  async close(): Promise<void> {
    await Promise.all([this.cache.close(), this.control.close()]);
  }
}

/** The source for http: and https: dataset URLs. */
export async function edgeSource(url: URL, o: SourceOptions): Promise<DatasetSource> {
  // A public r2.dev URL is no edge: say so, instead of failing on its manifest route.
  assertNotPublicBucketUrl(url);
  const cache = o.cache
    ? await remoteCache(o.cache, o.rank, o.cacheLocal === undefined ? {} : { local: o.cacheLocal })
    : await inProcessCache(url.origin, o.cacheBytes);
  const edgeKeys = o.edgeKeys === undefined ? undefined : await pinnedKeys(o.edgeKeys, "edgeKeys");
  return new EdgeSource(url.href, o.token, cache, { edgeKeys, knownEdges: o.knownEdges });
}
