/**
 * Direct-to-bucket mode: an r2:// or s3:// dataset read without the edge. Where the edge's
 * indexer keeps a dataset table in the bucket (`_ec/table/`), the client plans from it, as
 * through the edge; otherwise it does the edge's work: it lists the prefix, builds each
 * object's index from presigned range GETs (never the whole object), keeps the indexes on
 * disk keyed by ETag and its own table of the prefix next to them (local-table.ts), so the
 * next open indexes only what changed.
 */
import { tableRoot } from "../../../common/dataset-table/entry.js";
import { tableKeys } from "../../../common/dataset-table/table-keys.js";
import { PublicKeysV1 } from "../../../common/schema/index.js";
import { LazyTable } from "../../../common/lazy-table.js";
import {
  type DatasetTable,
  type ReadHead,
  readTable,
  recordingHeads,
  reusingHead,
  type TableStore,
} from "../../../common/table-client.js";
import { pageDigest } from "../page-check.js";
import { pinnedKeys, trustFirstSeen } from "../edge-keys.js";
import type { EdgeKeysInput } from "../edge-keys-option.js";
import { InvalidOptionError, ResumeError, SdkError } from "../../errors.js";
import { Agent } from "undici";
import {
  buildIndex,
  guessKind,
  HOST_INDEX_MEMORY_BYTES,
  MAX_INDEX_READS,
  type RangeReader,
} from "../../../common/media-index/index.js";
import type { IndexV1 } from "../../../common/schema/index.js";
import { inProcessCache, remoteCache, type ByteCache } from "../cache-client.js";
import { shardsBySize } from "../local-dir.js";
import { EntryColumns } from "../../../common/dataset-table/entry-columns.js";
import type { DatasetListing, DatasetObject, DatasetSource, PlannedRange, SourceStats } from "../source.js";
import { DEFAULT_TABLE_BYTES, defaultIndexCacheDir, IndexDiskCache } from "./index-disk-cache.js";
import { localTableEntries } from "./local-table.js";
import { rangeGet } from "./range-get.js";
import { S3Bucket } from "./s3-bucket.js";
import { resolveCredentials } from "./s3-credentials.js";
import type { S3Env } from "./s3-env.js";
import { mapS3Error, objectChanged, S3SourceError } from "./s3-errors.js";
import { parseBucketUrl, parseS3Options, type S3Options } from "./s3-url.js";

export interface S3SourceOptions extends S3Options {
  /** origin-cache URL: reads go through its /v1/fetch; it must list the bucket as an upstream (see bucketUpstream). */
  cache?: string;
  /** With a loopback `cache`: pread its slabs directly (see remoteCache); default on unless EC_CACHE_LOCAL=0. */
  cacheLocal?: boolean;
  /** This process's rank: names its plans at a shared origin-cache. */
  rank?: number;
  /** In-process cache budget in bytes when there is no `cache`; default 256 MiB. */
  cacheBytes?: number;
  /** Where client-built indexes are kept; default: defaultIndexCacheDir(). */
  indexCacheDir?: string;
  /** The keys the bucket's dataset table must be signed with (`edgeKeys`); default: those first seen for the bucket. */
  edgeKeys?: EdgeKeysInput | undefined;
  /** The file of keys first seen (default: knownEdgesPath()). */
  knownEdges?: string | undefined;
  /** Bound of the indexes in that directory in bytes; default 256 MiB. */
  indexCacheBytes?: number;
  /** Bound of the local tables in that directory in bytes, apart from the indexes'; default $EC_LOCAL_TABLE_BYTES, else 1 GiB. */
  localTableBytes?: number;
}

export class S3Source implements DatasetSource {
  /** Index reads go straight to the bucket: header bytes stay out of the byte cache and bytes_fetched. */
  private readonly agent = new Agent({ connections: 16, keepAliveTimeout: 30_000 });
  private readonly scope: string;
  private indexRequests = 0;
  private indexBytes = 0;
  /** Objects the last listing found missing or changed in the local table. */
  private tableIndexed = 0;
  /** Local table pages the last listing read and wrote. */
  private tablePages = { read: 0, written: 0 };
  /** Objects the last listing could not keep in the local table (past its bound). */
  private tableUnkept = 0;
  /** The plans handed over, each passed to the cache once presigned, in order. */
  private planning: Promise<void> = Promise.resolve();
  /** The bucket's table as last listed, whose pins a read awaits (page format 3 keeps etags apart). */
  private listed: EntryColumns | undefined;
  /** The bucket's table read lazily (`listLazy`), whose pages' pins a read awaits. */
  private lazy: LazyTable | undefined;
  /** The head `listLazy` read, for the `list` that follows it. */
  private readHead: ReadHead | undefined;
  private madeStore: ReturnType<S3Source["tableStore"]> | null = null;

  /** @internal use openS3Source */
  constructor(
    readonly bucket: S3Bucket,
    private readonly cache: ByteCache,
    private readonly indexes: IndexDiskCache,
    private readonly trust: { edgeKeys?: PublicKeysV1 | undefined; knownEdges?: string | undefined } = {},
  ) {
    this.scope = `${bucket.endpoint}\n${bucket.location.bucket}`;
  }

  async list(opts: { readonly generation?: number | undefined } = {}): Promise<DatasetListing> {
    const table = await this.table(opts.generation);
    this.listed = table?.entries;
    this.lazy = undefined;
    if (table) {
      return {
        objects: table.entries,
        shards: shardsBySize(table.entries.columns.size),
        entries: table.entries,
        generation: table.head.generation,
        digest: table.digest,
      };
    }
    if (opts.generation !== undefined) {
      throw new ResumeError(
        "ERR_RESUME_MISMATCH",
        `Expected generation ${opts.generation} of the dataset table (the checkpoint's) but the bucket has none for this prefix`,
      );
    }
    const { entries, indexed, reused, pagesRead, pagesWritten, unkept } = await localTableEntries(
      await this.objects(),
      (object) => this.index(object),
      this.indexes,
      { scope: this.scope, prefix: this.bucket.location.prefix },
    );
    this.tableIndexed = indexed;
    this.tablePages = { read: pagesRead, written: pagesWritten };
    this.tableUnkept = unkept;
    const objects: DatasetObject[] = entries.map((e) => ({ key: e.key, size: e.size, etag: e.etag, kind: e.kind }));
    return {
      objects,
      shards: shardsBySize(objects),
      entries: EntryColumns.from(entries),
      notice: this.tableNotice(entries.length, reused, unkept),
    };
  }

  /**
   * What open() says once where the bucket has no table: planned from every index, or from the
   * local table; and where the table did not fit its bound, how many objects the next open indexes again.
   */
  private tableNotice(objects: number, reused: number, unkept: number): SdkError {
    const { scheme, bucket, prefix } = this.bucket.location;
    const missing = `No dataset table for ${scheme}://${bucket}/${prefix} in the bucket (\`ec index\` on the dataset's URL builds one: docs/indexing.md)`;
    const past =
      unkept === 0
        ? ""
        : `; ${unkept} of ${objects} objects did not fit the local table's bound of ${this.indexes.tableBytes} bytes (EC_LOCAL_TABLE_BYTES) and are indexed again at every open`;
    return new SdkError(
      "ERR_TABLE_MISSING",
      reused === 0
        ? `${missing} nor on this host yet; planning from every object's index, built on the client, which grows with the dataset (the next open plans from the local table this one keeps in ${this.indexes.dir})${past}`
        : `${missing}; planned from the local table in ${this.indexes.dir} (${objects - reused} of ${objects} objects indexed again: new, changed, or on a page the cache no longer holds)${past}`,
    );
  }

  /**
   * The prefix's objects as the bucket lists them (kind guessed from the key): list() without
   * the table entries, so no index is read.
   */
  async objects(): Promise<DatasetObject[]> {
    const listed = await this.bucket.list();
    return listed.map((o) => ({ key: o.key, size: o.size, etag: o.etag, kind: guessKind(o.key) }));
  }

  /**
   * The edge's table of this prefix, read from the bucket with presigned GETs and verified
   * with the pinned keys (`edgeKeys`, EC_EDGE_KEYS), else with the public keys the indexer stores
   * next to it as first seen for this bucket (whoever may write the bucket may also replace
   * them: a change is ERR_MANIFEST_KEY_CHANGED). Undefined where there is none.
   */
  private async table(generation: number | undefined): Promise<DatasetTable | undefined> {
    const at = this.tableAt();
    const head = this.readHead;
    this.readHead = undefined;
    // Node's synchronous hash, as the edge source checks its pages (see page-check.ts).
    return at && readTable(reusingHead(at.store, head), at.keys, at.prefix, generation, pageDigest);
  }

  /**
   * The bucket's table read lazily (latest generation, or `generation`): the head and the page
   * range under the prefix now, each page when asked for (what open() takes unless
   * `OpenParts.lazy` is false). Undefined where the bucket has none.
   *
   * @example
   * const table = await source.listLazy();
   */
  async listLazy(opts: { readonly generation?: number | undefined } = {}): Promise<LazyTable | undefined> {
    const at = this.tableAt();
    // A table too small to read lazily (or none) is listed whole next: from the head read here.
    const store = at && recordingHeads(at.store, (read) => (this.readHead = read));
    const table = at && (await LazyTable.open(store!, at.keys, at.prefix, opts.generation, pageDigest));
    if (table) this.lazy = table;
    return table;
  }

  /** tableStore(), made once: a lazy open and the listing after it ask for the keys once. */
  private tableAt(): ReturnType<S3Source["tableStore"]> {
    if (this.madeStore === null) this.madeStore = this.tableStore();
    return this.madeStore;
  }

  /** The table routes of the bucket (presigned GETs), its keys and the prefix; undefined where the prefix has no table root. */
  private tableStore(): { store: TableStore; keys: Promise<PublicKeysV1>; prefix: string } | undefined {
    const prefix = this.bucket.location.prefix.replace(/\/+$/, "");
    const root = prefix ? tableRoot(`${prefix}/`) : undefined;
    if (root === undefined) return undefined;
    const get = async (key: string): Promise<Response | undefined> => {
      const res = await fetch(await this.bucket.presignGet(key));
      // No table (404; 403 without ListBucket permission), or a bucket the listing will explain
      // better (a wrong region, denied credentials): plan without one.
      if (res.ok) return res;
      await res.body?.cancel();
      return undefined;
    };
    const identity = `${this.bucket.endpoint.replace(/\/+$/, "")}/${this.bucket.location.bucket}`;
    const keys = trustFirstSeen(
      identity,
      () => get(tableKeys.publicKeys()).then(async (res) => PublicKeysV1.parse(res ? await res.json() : { keys: [] })),
      `\`ec keys\` on an edge that indexes this bucket, or by removing the entry ${JSON.stringify(identity)}`,
      { pinned: this.trust.edgeKeys, path: this.trust.knownEdges },
    );
    keys.catch(() => {});
    const stored = async (key: string) => {
      const res = await get(key);
      if (!res)
        throw mapS3Error({ name: "NoSuchKey", $metadata: { httpStatusCode: 404 } }, this.bucket.context("read", key));
      return new Uint8Array(await res.arrayBuffer());
    };
    const store: TableStore = {
      head: async (g) => (await get(g === undefined ? tableKeys.head(root) : tableKeys.generation(root, g)))?.json(),
      page: (name) => stored(tableKeys.page(root, name)),
      pins: (name) => stored(tableKeys.pins(root, name)),
    };
    return { store, keys, prefix };
  }

  /** A RangeReader over the listed version of `object`, straight from the bucket; what buildIndex reads through. */
  reader(object: DatasetObject): RangeReader {
    return {
      size: object.size,
      read: async (offset, length) => {
        this.indexRequests++;
        const url = await this.bucket.presignGet(object.key);
        const bytes = await rangeGet(
          { url, etag: object.etag, size: object.size },
          offset,
          length,
          this.bucket.context("read", object.key),
          { dispatcher: this.agent },
        );
        this.indexBytes += bytes.length;
        return bytes;
      },
    };
  }

  async index(object: DatasetObject): Promise<IndexV1> {
    // Ahead of an object's first clip: the etag that pins its reads, from its table page's pins.
    await (this.lazy ?? this.listed)?.objectPinned(object);
    const id = IndexDiskCache.id(this.scope, object.key, object.etag);
    const cached = await this.indexes.get(id, object);
    if (cached) return cached;
    let index: IndexV1;
    try {
      // Each read is a ranged GET: the edge's cap keeps a file of many tiny boxes from costing one
      // per box without end (an ERR_HEADER_TOO_LARGE record instead).
      index = await buildIndex(this.reader(object), {
        key: object.key,
        etag: object.etag,
        maxReads: MAX_INDEX_READS,
        memoryBytes: HOST_INDEX_MEMORY_BYTES,
      });
    } catch (err) {
      // The indexer wraps failed reads; the bucket's own reason (changed, denied, gone) is what a user acts on.
      const cause = (err as { cause?: unknown }).cause;
      throw cause instanceof S3SourceError ? cause : err;
    }
    return this.indexes.put(id, index);
  }

  async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
    await (this.lazy ?? this.listed)?.objectPinned(object);
    const url = await this.bucket.presignGet(object.key);
    // The plan handed over before this read is being presigned: the cache gets it first, so the
    // read finds its span located ahead instead of locating (and pulling) on its own.
    await this.planning;
    try {
      return await this.cache.read(url, offset, length, object.etag);
    } catch (err) {
      const context = this.bucket.context("read", object.key);
      const code = (err as { code?: unknown }).code;
      if (code === "ERR_ETAG_CHANGED") throw objectChanged(context, "the cache saw a new ETag");
      const status = (err as { upstreamStatus?: unknown }).upstreamStatus;
      if (typeof status === "number")
        throw mapS3Error({ name: `HTTP ${status}`, $metadata: { httpStatusCode: status } }, context);
      throw err;
    }
  }

  plan(ranges: readonly PlannedRange[]): void {
    if (ranges.length === 0) return;
    // A hint: the stream is correct without it, so a failed presign only drops the hint. Plans
    // reach the cache in order (a later one replaces an earlier one there).
    this.planning = this.planning
      .then(() =>
        Promise.all(
          // Named as `read` names them (URL and ETag): the cache's plane finds a read's span by both.
          ranges.map(async (r) => ({
            url: await this.bucket.presignGet(r.object.key),
            etag: r.object.etag,
            offset: r.offset,
            length: r.length,
            size: r.object.size,
          })),
        ),
      )
      .then((planned) => this.cache.plan(planned))
      .catch(() => {});
  }

  stats(): SourceStats {
    return this.cache.stats();
  }

  /** Index cache counters and the range GETs made for indexing, for tests and `ec inspect`. */
  counters(): {
    indexHits: number;
    indexMisses: number;
    indexRequests: number;
    indexBytes: number;
    tableIndexed: number;
    tablePagesRead: number;
    tablePagesWritten: number;
    tableUnkept: number;
  } {
    return {
      tableIndexed: this.tableIndexed,
      tablePagesRead: this.tablePages.read,
      tablePagesWritten: this.tablePages.written,
      tableUnkept: this.tableUnkept,
      indexHits: this.indexes.hits,
      indexMisses: this.indexes.misses,
      indexRequests: this.indexRequests,
      indexBytes: this.indexBytes,
    };
  }

  async close(): Promise<void> {
    await this.cache.close();
    this.bucket.destroy();
    await this.agent.close();
  }
}

/**
 * The origin-cache upstream that admits this bucket's presigned URLs and nothing else:
 * endpoint/BUCKET/ for path-style addressing, the bucket's own host otherwise.
 *
 * @example
 * await bucketUpstream(bucket); // "https://ACCOUNT.r2.cloudflarestorage.com/videos/"
 */
export async function bucketUpstream(bucket: S3Bucket): Promise<string> {
  const probe = new URL(await bucket.presignGet(`${bucket.location.prefix}upstream-probe`));
  return bucket.location.forcePathStyle
    ? `${probe.origin}/${encodeURIComponent(bucket.location.bucket)}/`
    : `${probe.origin}/`;
}

/**
 * Opens an r2:// or s3:// dataset: validates options, resolves credentials (options, then
 * R2_* / AWS_* of `env`, the variables resolveOptions picked; none by default), and returns a
 * DatasetSource. No request is made yet.
 *
 * @example
 * const source = await openS3Source(new URL("r2://0123456789abcdef0123456789abcdef/videos/gameplay"));
 * const { objects } = await source.list();
 */
export async function openS3Source(url: URL, options: S3SourceOptions = {}, env: S3Env = {}): Promise<S3Source> {
  const { credentials } = parseS3Options(options);
  const tableBytes = localTableBytes(options.localTableBytes, env);
  const location = parseBucketUrl(url, options, env);
  const edgeKeys = options.edgeKeys === undefined ? undefined : await pinnedKeys(options.edgeKeys, "edgeKeys");
  const bucket = new S3Bucket(location, resolveCredentials(location, credentials, env));
  try {
    const cache = options.cache
      ? await remoteCache(
          options.cache,
          options.rank,
          options.cacheLocal === undefined ? {} : { local: options.cacheLocal },
        )
      : await inProcessCache(await bucketUpstream(bucket), options.cacheBytes ?? 256 << 20);
    return new S3Source(
      bucket,
      cache,
      new IndexDiskCache(options.indexCacheDir ?? defaultIndexCacheDir(env), options.indexCacheBytes, tableBytes),
      { edgeKeys, knownEdges: options.knownEdges },
    );
  } catch (err) {
    bucket.destroy();
    throw err;
  }
}

/** The local tables' bound: the option, else $EC_LOCAL_TABLE_BYTES, else 1 GiB; checked before any I/O. */
function localTableBytes(option: number | undefined, env: S3Env): number {
  const [name, value] =
    option !== undefined ? ["localTableBytes", option] : ["EC_LOCAL_TABLE_BYTES", env.EC_LOCAL_TABLE_BYTES];
  if (value === undefined || value === "") return DEFAULT_TABLE_BYTES;
  const n = typeof value === "number" ? value : /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new InvalidOptionError(`Expected a positive integer of bytes for ${name} but received ${String(value)}`);
  return n;
}
