/**
 * Client side of the manifest and index routes (SDK, CLI): fetches a dataset's manifest
 * pages with the bearer token, verifies each page's Ed25519 signature, and fetches and
 * decodes indexes from their signed URLs.
 */
import { ErrorBody } from "./errors.js";
import { ManifestError, ManifestErrorCode, verifyManifest } from "./manifest-sign.js";
import { decodeIndex } from "./media-index/index.js";
import { INDEX_ROUTE, OBJECTS_ROUTE } from "./sign.js";
import { PublicKeysV1, type IndexV1, type ManifestObjectV1, type ManifestV1, type ShardV1 } from "./schema/index.js";

export interface ManifestClientOptions {
  /** Bearer token for the manifest route. */
  readonly token?: string | undefined;
  /**
   * Trusted public keys (pinned, or remembered from the first use of the edge); when absent
   * they are fetched from the edge's GET /v1/keys, which vouches for nothing that the same edge
   * serves: whoever can rewrite a manifest can rewrite its keys.
   */
  readonly keys?: PublicKeysV1 | Promise<PublicKeysV1> | undefined;
  /** Objects per page (1..1000); the edge's default when absent. */
  readonly limit?: number | undefined;
  /** Virtual shard target in bytes; the edge's default when absent. */
  readonly shardBytes?: number | undefined;
  /** Unix seconds now, for the expiry check. */
  readonly now?: (() => number) | undefined;
  readonly fetch?: typeof fetch | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** A dataset URL taken apart: `https://edge/v1/datasets/gameplay` → edge + prefix. */
export interface DatasetLocation {
  readonly edge: string;
  readonly prefix: string;
}

const DATASETS = "/v1/datasets/";

/**
 * Splits `http(s)://HOST/v1/datasets/PREFIX` into the edge origin and the dataset prefix.
 *
 * @example
 * parseDatasetUrl("http://127.0.0.1:8787/v1/datasets/gameplay"); // { edge: "http://127.0.0.1:8787", prefix: "gameplay" }
 */
export function parseDatasetUrl(url: string): DatasetLocation {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `Expected a dataset URL like https://HOST/v1/datasets/PREFIX but received ${JSON.stringify(url)}`,
      { cause },
    );
  }
  const prefix = parsed.pathname.startsWith(DATASETS)
    ? decodeURIComponent(parsed.pathname.slice(DATASETS.length)).replace(/\/+$/, "")
    : "";
  if (!/^https?:$/.test(parsed.protocol) || !prefix) {
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `Expected a dataset URL like https://HOST/v1/datasets/PREFIX but received ${JSON.stringify(url)}`,
    );
  }
  return { edge: parsed.origin, prefix };
}

/** A GET (or `init`'s method) to the edge; an error answer throws ERR_MANIFEST_HTTP unless its status is in `pass`. */
export async function request(
  url: string,
  opts: ManifestClientOptions,
  headers: Record<string, string> = {},
  init: RequestInit = {},
  pass: readonly number[] = [],
): Promise<Response> {
  let res: Response;
  try {
    // No redirect is followed: an answer of the edge must not send this host's GETs elsewhere.
    res = await (opts.fetch ?? fetch)(url, {
      ...init,
      headers,
      redirect: "manual",
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (cause) {
    throw new ManifestError(
      ManifestErrorCode.HTTP,
      `Could not reach ${new URL(url).origin}: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (res.ok || pass.includes(res.status)) return res;
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel().catch(() => {});
    throw new ManifestError(
      ManifestErrorCode.REDIRECT,
      `${new URL(url).pathname} answered ${res.status}, a redirect${res.headers.get("location") ? ` to ${JSON.stringify(res.headers.get("location"))}` : ""}; ec follows none from the edge`,
      { status: res.status },
    );
  }
  const text = await res.text().catch(() => "");
  let detail = text.slice(0, 200);
  try {
    const body = ErrorBody.parse(JSON.parse(text));
    detail = `${body.error.code}: ${body.error.message}`;
  } catch {
    // Not an ec error body; the raw text says what there is to say.
  }
  throw new ManifestError(
    ManifestErrorCode.HTTP,
    `${new URL(url).pathname} answered ${res.status}${detail ? ` (${detail})` : ""}`,
    { status: res.status },
  );
}

/**
 * The edge's manifest public keys (GET /v1/keys).
 *
 * @example
 * const keys = await fetchPublicKeys("http://127.0.0.1:8787");
 */
export async function fetchPublicKeys(edge: string, opts: ManifestClientOptions = {}): Promise<PublicKeysV1> {
  const res = await request(`${edge.replace(/\/+$/, "")}/v1/keys`, opts);
  const parsed = PublicKeysV1.safeParse(await res.json().catch(() => undefined));
  if (!parsed.success)
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `GET /v1/keys did not return PublicKeysV1: ${parsed.error.message}`,
    );
  return parsed.data;
}

/**
 * Throws ERR_MANIFEST_FOREIGN_URL unless `url` is of the edge's own origin and under `route`
 * (`/v1/objects/`, `/v1/index/`): a forged manifest or /urls answer must not make training hosts
 * send requests to other hosts (internal addresses) or to other routes of the edge.
 *
 * @example
 * assertEdgeUrl("http://127.0.0.1:8787", OBJECTS_ROUTE, object.url, object.key);
 */
export function assertEdgeUrl(edge: string, route: string, url: string, key: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (
    parsed?.origin === new URL(edge).origin &&
    parsed.pathname.startsWith(route) &&
    !parsed.username &&
    !parsed.password
  )
    return;
  throw new ManifestError(
    ManifestErrorCode.FOREIGN_URL,
    `Expected the URLs of ${JSON.stringify(key)} under ${new URL(edge).origin}${route} (the edge's own) but received ${JSON.stringify(url.slice(0, 200))}`,
  );
}

/** Every object URL and index URL of a manifest page or /urls answer checked with assertEdgeUrl. */
export function assertEdgeUrls(
  edge: string,
  objects: readonly { readonly key: string; readonly url: string; readonly indexUrl: string }[],
): void {
  for (const o of objects) {
    assertEdgeUrl(edge, OBJECTS_ROUTE, o.url, o.key);
    assertEdgeUrl(edge, INDEX_ROUTE, o.indexUrl, o.key);
  }
}

/** `EDGE/v1/datasets/{prefix}` with the prefix percent-encoded segment by segment. */
export function datasetBase(at: DatasetLocation): string {
  return `${at.edge}${DATASETS}${at.prefix.split("/").map(encodeURIComponent).join("/")}`;
}

function pageUrl(at: DatasetLocation, opts: ManifestClientOptions, cursor: string | null): string {
  const q = new URLSearchParams();
  if (cursor) q.set("cursor", cursor);
  if (opts.limit !== undefined) q.set("limit", String(opts.limit));
  if (opts.shardBytes !== undefined) q.set("shardBytes", String(opts.shardBytes));
  const query = q.size > 0 ? `?${q}` : "";
  return `${datasetBase(at)}/manifest${query}`;
}

/**
 * Yields each verified manifest page of a dataset in order. A page whose signature does not
 * verify, that has expired, or that speaks for another dataset or holds keys outside the
 * prefix throws ManifestError (ERR_MANIFEST_SIGNATURE / _EXPIRED / _INVALID / _UNKNOWN_KEY).
 *
 * @example
 * for await (const page of manifestPages("http://127.0.0.1:8787/v1/datasets/gameplay", { token })) console.log(page.objects.length);
 */
export async function* manifestPages(datasetUrl: string, opts: ManifestClientOptions = {}): AsyncGenerator<ManifestV1> {
  const at = parseDatasetUrl(datasetUrl);
  // The keys are fetched while the first page is: one round trip less before the first page.
  const keys = opts.keys ? Promise.resolve(opts.keys) : fetchPublicKeys(at.edge, opts);
  keys.catch(() => {}); // surfaced where it is awaited, unless the page failed first
  const headers: Record<string, string> = opts.token ? { authorization: `Bearer ${opts.token}` } : {};
  let cursor: string | null = null;
  do {
    const res = await request(pageUrl(at, opts, cursor), opts, headers);
    const body = await res.json().catch((cause: unknown) => {
      throw new ManifestError(ManifestErrorCode.INVALID, "The manifest page is not JSON", { cause });
    });
    const page = await verifyManifest(body, await keys, opts.now ? { now: opts.now() } : {});
    if (page.dataset !== at.prefix) {
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `Asked for dataset ${JSON.stringify(at.prefix)} but the manifest is for ${JSON.stringify(page.dataset)}`,
      );
    }
    const stray = page.objects.find((o) => !o.key.startsWith(`${at.prefix}/`));
    if (stray)
      throw new ManifestError(
        ManifestErrorCode.INVALID,
        `Manifest of ${JSON.stringify(at.prefix)} lists ${JSON.stringify(stray.key)} outside the prefix`,
      );
    assertEdgeUrls(at.edge, page.objects);
    yield page;
    cursor = page.cursor;
  } while (cursor);
}

/** Every page of a manifest merged: shard `first` indexes point into the merged `objects`. */
export interface DatasetManifest {
  readonly dataset: string;
  readonly edge: string;
  /** The earliest expiry of any page: the signed URLs stop working then. */
  readonly expiresAt: number;
  readonly objects: ManifestObjectV1[];
  readonly shards: ShardV1[];
  readonly pages: number;
}

/**
 * Fetches and verifies every page of a dataset's manifest and merges them.
 *
 * @example
 * const { objects, shards } = await fetchManifest("http://127.0.0.1:8787/v1/datasets/gameplay", { token });
 */
export async function fetchManifest(datasetUrl: string, opts: ManifestClientOptions = {}): Promise<DatasetManifest> {
  const objects: ManifestObjectV1[] = [];
  const shards: ShardV1[] = [];
  let expiresAt = Number.POSITIVE_INFINITY;
  let pages = 0;
  let first: ManifestV1 | undefined;
  for await (const page of manifestPages(datasetUrl, opts)) {
    first ??= page;
    for (const s of page.shards) shards.push({ ...s, first: s.first + objects.length });
    objects.push(...page.objects);
    expiresAt = Math.min(expiresAt, page.expiresAt);
    pages++;
  }
  return { dataset: first!.dataset, edge: first!.edge, expiresAt, objects, shards, pages };
}

/**
 * Fetches one object's index from its signed URL (a manifest's `indexUrl`) and decodes it.
 * Bad media is an index of kind "error", not an exception; HTTP failures and undecodable
 * bytes throw (ManifestError ERR_MANIFEST_HTTP, MediaIndexError ERR_INDEX_DECODE).
 *
 * @example
 * const index = await fetchIndex(object.indexUrl);
 */
export async function fetchIndex(
  indexUrl: string,
  opts: Pick<ManifestClientOptions, "fetch" | "signal"> & {
    /** The edge's origin: an index URL elsewhere is refused (ERR_MANIFEST_FOREIGN_URL) before any request. */
    readonly edge?: string | undefined;
  } = {},
): Promise<IndexV1> {
  if (opts.edge !== undefined) assertEdgeUrl(opts.edge, INDEX_ROUTE, indexUrl, indexUrl);
  const res = await request(indexUrl, opts);
  return decodeIndex(new Uint8Array(await res.arrayBuffer()));
}
